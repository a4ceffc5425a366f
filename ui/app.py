"""The aiohttp application of ``spanrl ui``: routes, templates, security headers, server timing.

Handlers parse the URL, run the page function of ``ui/pages.py`` in a worker thread (DuckDB work
must not block the event loop, so a search can be polled while a page renders) and render a Jinja2
template. Every response carries a Content-Security-Policy that allows this server only, so no page
can load or send anything elsewhere, and a ``Server-Timing`` header (what ``bench/ui.py`` measures).
"""

from __future__ import annotations

import asyncio
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from aiohttp import web

from spanrl.errors import InputError
from spanrl.ui import pages
from spanrl.ui.auth import auth_middleware, login_check, safe_next
from spanrl.ui.data import Lake
from spanrl.ui.filters import RolloutFilter, format_ns
from spanrl.ui.guard import allowed_hosts, is_cross_site, origin_guard
from spanrl.ui.prompt_versions import prompts_view
from spanrl.ui.search import Searches

CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
LAKE: web.AppKey[Lake] = web.AppKey("lake", Lake)
SEARCHES: web.AppKey[Searches] = web.AppKey("searches", Searches)
TOKEN: web.AppKey[str | None] = web.AppKey("token", str)
ENV: web.AppKey[jinja2.Environment] = web.AppKey("env", jinja2.Environment)
EXAMPLES: web.AppKey[list] = web.AppKey("examples", list)
QUERIES_DOC = Path(__file__).resolve().parents[1] / "docs" / "queries.md"


def example_queries(doc: Path = QUERIES_DOC) -> list[tuple[str, str]]:
    """(title, SQL) of every ``## N. title`` + sql block of docs/queries.md (the SQL page's examples)."""
    if not doc.is_file():
        return []
    text = doc.read_text(encoding="utf-8")
    return [(title.strip(), sql.strip()) for title, sql in
            re.findall(r"^## \d+\.\s*(.+?)\n.*?```sql\n(.*?)```", text, flags=re.MULTILINE | re.DOTALL)]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("spanrl.ui", "templates"),
                             autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["ns"] = format_ns
    env.filters["num"] = lambda v, spec=".3f": "" if v is None else format(v, spec)
    env.filters["q"] = lambda v: quote(str(v), safe="")
    return env


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    html = request.app[ENV].get_template(template).render(
        path=request.path, logged_in=request.app[TOKEN] is not None, **context)
    return web.Response(text=html, content_type="text/html", status=status)


async def in_thread(func: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(func, *args, **kwargs)


@web.middleware
async def headers_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """CSP and friends on every response; bad input becomes a 400 page, unknown ids a 404."""
    t0 = time.perf_counter()
    try:
        response = await handler(request)
    except pages.NotFound as exc:
        response = render(request, "error.html", status=404, message=str(exc))
    except web.HTTPNotFound:
        # an unknown route: the styled page with the navigation, not aiohttp's bare "404: Not Found"
        if request.path.startswith("/api/"):
            response = web.json_response({"error": f"no such endpoint: {request.path}"}, status=404)
        else:
            response = render(request, "error.html", status=404,
                              message=f"No page at {request.path}. Use the navigation above.")
    except InputError as exc:
        if request.path.startswith("/api/"):
            response = web.json_response({"error": str(exc)}, status=400)
        else:
            response = render(request, "error.html", status=400, message=str(exc))
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.1f}"
    return response


async def index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/rollouts")


async def rollouts(request: web.Request) -> web.StreamResponse:
    flt = RolloutFilter.from_query(request.query)
    if any(v == "" for v in request.query.values()):  # the filter form sends every field: share the short URL
        raise web.HTTPFound(flt.url())
    ctx = await in_thread(pages.rollouts_view, request.app[LAKE], request.app[SEARCHES], flt,
                          run_search=request.query.get("run") == "1", may_start=not is_cross_site(request),
                          clamp=True)
    return render(request, "rollouts.html", **ctx)


async def rollout(request: web.Request) -> web.StreamResponse:
    ctx = await in_thread(pages.rollout_view, request.app[LAKE], request.match_info["rollout_id"],
                          request.query.get("snapshot") or None)
    return render(request, "rollout.html", **ctx)


async def tasks(request: web.Request) -> web.StreamResponse:
    ctx = await in_thread(pages.tasks_view, request.app[LAKE], _page(request))
    return render(request, "tasks.html", **ctx)


async def snapshots(request: web.Request) -> web.StreamResponse:
    return render(request, "snapshots.html", **await in_thread(pages.snapshots_view, request.app[LAKE]))


async def snapshot(request: web.Request) -> web.StreamResponse:
    ctx = await in_thread(pages.snapshot_view, request.app[LAKE], request.match_info["snapshot_id"], _page(request))
    return render(request, "snapshot.html", **ctx)


async def cycles(request: web.Request) -> web.StreamResponse:
    return render(request, "cycles.html", **await in_thread(pages.cycles_view, request.app[LAKE]))


async def prompts(request: web.Request) -> web.StreamResponse:
    return render(request, "prompts.html", **await in_thread(prompts_view, request.app[LAKE].data))


async def sql(request: web.Request) -> web.StreamResponse:
    ctx = await in_thread(pages.sql_view, request.app[LAKE], request.query.get("q", ""), request.app[EXAMPLES])
    return render(request, "sql.html", status=400 if ctx["error"] else 200, **ctx)


async def search_status(request: web.Request) -> web.StreamResponse:
    """GET /api/search?q=TEXT: the job's state and progress (404 when no such search ran)."""
    lake = request.app[LAKE]
    job = request.app[SEARCHES].get(request.query.get("q", ""), lake._prepared.version, start=False)
    if job is None:
        return web.json_response({"error": "no such search; open /rollouts?q=TEXT to start one"}, status=404)
    return web.json_response(job.status())


async def search_cancel(request: web.Request) -> web.StreamResponse:
    """POST /api/search/cancel?q=TEXT: interrupt the search (its statement stops at once)."""
    lake = request.app[LAKE]
    job = request.app[SEARCHES].get(request.query.get("q", ""), lake._prepared.version, start=False)
    if job is not None:
        job.cancel()
    return web.json_response(job.status() if job else {"state": "none"})


async def api_rollouts(request: web.Request) -> web.StreamResponse:
    """The Rollouts table as JSON (same query string as the page)."""
    flt = RolloutFilter.from_query(request.query)
    ctx = await in_thread(pages.rollouts_view, request.app[LAKE], request.app[SEARCHES], flt)
    keys = ("rollout_id", "task_id", "agent_names", "n_llm_calls", "n_tool_calls", "n_errors", "final_reward",
            "air_hits", "started_ns", "ended_ns", "complete")
    return web.json_response({"total": ctx["total"], "reward_mean": ctx["reward_mean"], "search": ctx["search"].status,
                              "rows": [{k: r[k] for k in keys} for r in ctx["rows"]]})


async def login_page(request: web.Request) -> web.StreamResponse:
    token = request.app[TOKEN]
    nxt = safe_next(request.query.get("next"))
    if token is None:
        raise web.HTTPFound(nxt)
    if request.method == "POST":
        response = await login_check(request, token)
        if response is not None:
            return response
        form = await request.post()
        return render(request, "login.html", status=401, next=safe_next(str(form.get("next", "/"))),
                      error="That is not the token this server was started with.")
    return render(request, "login.html", next=nxt, error="")


async def logout(request: web.Request) -> web.StreamResponse:
    response = web.Response(status=303, headers={"Location": "/login"})
    response.del_cookie("spanrl_ui", path="/")
    return response


def _page(request: web.Request) -> int:
    try:
        return max(1, int(request.query.get("page", "1")))
    except ValueError:
        raise InputError(f"page={request.query.get('page')!r} is not a page number") from None


def make_app(data: Path, token: str | None = None, lake: Lake | None = None, host: str = "127.0.0.1",
             allow_hosts: tuple[str, ...] = ()) -> web.Application:
    """The application over ``data`` (``lake`` may be passed in already warmed, as the CLI does);
    ``host`` (the bind address) and ``allow_hosts`` name the Host headers it answers to (ui/guard.py)."""
    app = web.Application(middlewares=[headers_middleware, origin_guard(allowed_hosts(host, allow_hosts)),
                                       auth_middleware(token)])
    app[LAKE] = lake or Lake(data)
    app[SEARCHES] = Searches(data)
    app[TOKEN] = token
    app[ENV] = _environment()
    app[EXAMPLES] = example_queries()
    app.router.add_get("/", index)
    app.router.add_get("/rollouts", rollouts)
    app.router.add_get("/rollouts/{rollout_id:.+}", rollout)
    app.router.add_get("/tasks", tasks)
    app.router.add_get("/snapshots", snapshots)
    app.router.add_get("/snapshots/{snapshot_id}", snapshot)
    app.router.add_get("/cycles", cycles)
    app.router.add_get("/prompts", prompts)
    app.router.add_get("/sql", sql)
    app.router.add_get("/api/rollouts", api_rollouts)
    app.router.add_get("/api/search", search_status)
    app.router.add_post("/api/search/cancel", search_cancel)
    app.router.add_route("*", "/login", login_page)
    app.router.add_get("/logout", logout)
    app.router.add_static("/static/", Path(str(resources.files("spanrl.ui").joinpath("static"))))

    async def stop_searches(_app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, _app[SEARCHES].cancel_all)

    app.on_shutdown.append(stop_searches)
    return app
