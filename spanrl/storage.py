"""Objects under one ``s3://BUCKET/PREFIX`` on any S3-compatible store: the few operations a data root
on object storage needs (docs/scale.md), with the conditional writes that replace a local root's
rename and ``flock``.

S3 has no rename, no hard link and no lock, but it has conditional PUTs: ``If-None-Match: *`` (create
only if absent) and ``If-Match: <ETag>`` (replace only what was read). A pointer swapped by
compare-and-swap and a lease object created-if-absent give the guarantees a local root gets from
``os.replace`` and ``fcntl`` (spanrl/remote.py). Configured only by the standard ``AWS_*`` variables
(``AWS_ENDPOINT_URL`` for MinIO, moto, R2, ...); boto3 is imported on first use, so a local root
never pays for it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanrl.errors import InputError

SCHEME = "s3://"


class Conflict(Exception):
    """A conditional write lost: the object exists (create) or changed since it was read (swap)."""


@dataclass(frozen=True)
class Stored:
    body: bytes
    etag: str


@dataclass(frozen=True)
class Fetched:
    """What one GET read: the sha256 of its bytes, their count, and the ETag of the version read."""

    sha256: str
    size: int
    etag: str


class _Discard:
    """A sink for bytes that are only hashed (``ObjectStore.fetch`` without a path)."""

    def __enter__(self) -> _Discard:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def write(self, chunk: bytes) -> None:
        return None


def is_remote(value: str | os.PathLike[str] | None) -> bool:
    """``s3://...``, also after ``pathlib`` folded it to ``s3:/...`` (a ``--data`` click parsed as a Path)."""
    return value is not None and str(value).startswith("s3:/")


def remote_url(value: str | os.PathLike[str]) -> str:
    """The ``s3://bucket/prefix`` a (possibly Path-folded) value names, without a trailing slash."""
    text = str(value)
    rest = text[len("s3://"):] if text.startswith(SCHEME) else text[len("s3:/"):]
    return SCHEME + rest.strip("/")


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> (``bucket``, ``a/b``); an InputError when there is no bucket."""
    rest = remote_url(url)[len(SCHEME):]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise InputError(f"{url}: no bucket; write s3://BUCKET/PREFIX")
    return bucket, prefix.strip("/")


def _client(endpoint: str | None = None) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError:  # pragma: no cover - depends on the install
        raise InputError("a data root on S3 needs boto3: pip install 'spanrl[s3]'") from None
    missing = [k for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not os.environ.get(k)]
    if missing and not (os.environ.get("AWS_PROFILE") or os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE")):
        raise InputError(f"a data root on S3 needs credentials: set {' and '.join(missing)} (or AWS_PROFILE), "
                         "plus AWS_REGION, and AWS_ENDPOINT_URL for a store other than AWS S3")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return boto3.client("s3", region_name=region, endpoint_url=endpoint or os.environ.get("AWS_ENDPOINT_URL") or None,
                        config=Config(retries={"max_attempts": 5, "mode": "standard"}))


class ObjectStore:
    """The objects under ``s3://bucket/prefix``; every key below is relative to the prefix."""

    def __init__(self, url: str, client: Any = None, endpoint: str | None = None) -> None:
        self.url = remote_url(url)
        self.bucket, self.prefix = split_url(self.url)
        self.client = client or _client(endpoint)  # endpoint: the driver's, in a worker (spanrl/remote_tasks.py)
        self.fetched = 0  # body bytes this store's GETs read (``spanrl sql`` prints it: spanrl/inplace.py)
        self._check_bucket()

    def _check_bucket(self) -> None:
        from botocore.exceptions import ClientError, EndpointConnectionError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            raise InputError(f"{self.url}: bucket {self.bucket!r} cannot be used ({code or exc}); create it or "
                             "check the credentials and AWS_ENDPOINT_URL") from None
        except EndpointConnectionError as exc:
            raise InputError(f"{self.url}: cannot reach the store ({exc}); check AWS_ENDPOINT_URL") from None

    @property
    def endpoint(self) -> str:
        """The URL the client talks to (``AWS_ENDPOINT_URL``, else AWS's regional one): the same bucket name
        on two endpoints is two roots, and a mirror of one must never serve the other."""
        return str(self.client.meta.endpoint_url)

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def get(self, rel: str) -> Stored | None:
        """The object and its ETag, or None when there is none."""
        from botocore.exceptions import ClientError

        try:
            r = self.client.get_object(Bucket=self.bucket, Key=self.key(rel))
        except ClientError as exc:
            if _no_such_key(exc):
                return None
            raise
        body = r["Body"].read()
        self.fetched += len(body)
        return Stored(body, r["ETag"])

    def put(self, rel: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None) -> str:
        """Write ``rel``; with ``if_none_match`` only when absent, with ``if_match`` only over that ETag
        (Conflict otherwise). Returns the new ETag."""
        from botocore.exceptions import ClientError

        extra: dict[str, str] = {}
        if if_none_match:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = if_match
        try:
            return self.client.put_object(Bucket=self.bucket, Key=self.key(rel), Body=body, **extra)["ETag"]
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
                raise Conflict(rel) from None
            raise

    def exists(self, rel: str) -> bool:
        return self.etag(rel) is not None

    def etag(self, rel: str) -> str | None:
        """The object's ETag (one HEAD), or None when there is none."""
        from botocore.exceptions import ClientError

        try:
            return self.client.head_object(Bucket=self.bucket, Key=self.key(rel))["ETag"]
        except ClientError as exc:
            if _no_such_key(exc):
                return None
            raise

    def delete(self, rel: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.key(rel))

    def delete_many(self, rels: list[str]) -> None:
        """Delete ``rels`` (1,000 per request); an error naming the first key the store refused."""
        for start in range(0, len(rels), 1000):
            batch = [{"Key": self.key(rel)} for rel in rels[start:start + 1000]]
            r = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            if r.get("Errors"):
                err = r["Errors"][0]
                raise InputError(f"{self.url}: the store refused to delete {err.get('Key')} ({err.get('Code')}: "
                                 f"{err.get('Message')}); {len(r['Errors'])} key(s) of this batch were not deleted")

    def upload(self, rel: str, path: Path) -> None:
        self.client.upload_file(str(path), self.bucket, self.key(rel))

    def fetch(self, rel: str, path: Path | None = None) -> Fetched | None:
        """Read ``rel`` in one GET, hashing the bytes as they come (and writing them to ``path`` when
        given): the digest is of exactly the bytes written, and the ETag names the object version read.
        None when there is no such object. A stream cut short is read again (three tries)."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            IncompleteReadError,
            ReadTimeoutError,
            ResponseStreamingError,
        )

        for attempt in range(3):
            try:
                r = self.client.get_object(Bucket=self.bucket, Key=self.key(rel))
            except ClientError as exc:
                if _no_such_key(exc):
                    return None
                raise
            digest, size = hashlib.sha256(), 0
            try:
                with open(path, "wb") if path is not None else _Discard() as sink:
                    for chunk in r["Body"].iter_chunks(1 << 20):
                        digest.update(chunk)
                        sink.write(chunk)
                        size += len(chunk)
                        self.fetched += len(chunk)
            except (ConnectionClosedError, IncompleteReadError, ReadTimeoutError, ResponseStreamingError):
                if attempt == 2:
                    raise
                continue
            return Fetched(digest.hexdigest(), size, r["ETag"])
        raise AssertionError("unreachable")  # pragma: no cover

    def listing(self, rel_prefix: str = "") -> dict[str, tuple[str, int]]:
        """{key relative to the prefix: (ETag, size)} of every object under ``rel_prefix``: one request
        per 1,000 objects, where a HEAD per object would cost one each."""
        strip = len(self.prefix) + 1 if self.prefix else 0
        out: dict[str, tuple[str, int]] = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.key(rel_prefix))
        for page in pages:
            for obj in page.get("Contents", []):
                out[obj["Key"][strip:]] = (obj["ETag"], int(obj["Size"]))
        return out


def _no_such_key(exc: Any) -> bool:
    """A botocore ClientError that says the object is not there (GET: NoSuchKey / 404, HEAD: NotFound)."""
    return exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")
