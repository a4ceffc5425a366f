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

// Deep links (#call-…, #span-…): open the target and every <details> around it, then scroll to it,
// on load and whenever the fragment changes (a click on an in-page link).
(function () {
  function reveal() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (!target) return;
    for (let el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    target.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", reveal);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", reveal);
  else reveal();
})();

// SQL page: Ctrl+Enter (Cmd+Enter) submits the query box.
(function () {
  const box = document.getElementById("sql-box");
  if (!box) return;
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      box.form.requestSubmit();
    }
  });
})();
