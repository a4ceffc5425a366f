// spanrl ui: the only script. A running text search is polled (progress bar) and can be cancelled;
// everything else works without JavaScript.
"use strict";
(function () {
  const box = document.getElementById("search");
  if (!box || box.dataset.state !== "running") return;
  const q = box.dataset.q;
  const api = (path) => path + "?q=" + encodeURIComponent(q);
  const bar = document.getElementById("search-progress");
  const pct = document.getElementById("search-pct");
  const cancel = document.getElementById("search-cancel");
  let stopped = false;
  cancel.addEventListener("click", async () => {
    stopped = true;
    cancel.disabled = true;
    await fetch(api("/api/search/cancel"), { method: "POST", credentials: "same-origin" });
    window.location.reload();
  });
  async function poll() {
    if (stopped) return;
    const res = await fetch(api("/api/search"), { credentials: "same-origin" });
    const job = await res.json();
    bar.value = job.progress;
    pct.textContent = Math.round(job.progress * 100) + "%";
    if (job.state === "running") setTimeout(poll, 400);
    else if (!stopped) window.location.reload();
  }
  setTimeout(poll, 300);
})();
