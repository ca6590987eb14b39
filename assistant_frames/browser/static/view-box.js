/*
 * assistant-frames view box: what the app page (app-page.js) and the dev page
 * (dev-page.js) both do with an MCP Apps view that Python describes as
 *   {id, title, state, error, fallback, displayMode, displayModes, src?, socket?, allow?, border?}
 * in an entry of theirs {box, placeholder, modes, relay, iframe, loads}:
 *   connect    the view's iframe behind the shipped parent relay in app mode (the relay
 *              sets its sandbox, allow and src once the view's WebSocket is open);
 *   showError  why the view could not be shown, then the tool's own text;
 *   showMode   its display mode, with CSS only (moving an iframe would reload it), and
 *              the mode buttons it may use;
 *   summary    a JSON-RPC message in a few words ("tools/call #3", "result #3").
 * window.AssistantFramesViewBox; needs parent-relay.js. Plain ES2020, no dependencies.
 */
(function () {
  "use strict";

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // Our own (empty) iframe, so that its loads are counted from the first.
  function connect(entry, view, url, token) {
    if (entry.relay || !view.src || !view.socket || typeof AssistantFramesRelay === "undefined") return;
    var iframe = el("iframe");
    iframe.title = view.title;
    entry.box.appendChild(iframe);
    iframe.addEventListener("load", function () {
      if (iframe.getAttribute("src")) entry.loads += 1;
    });
    entry.iframe = iframe;
    entry.relay = AssistantFramesRelay.parent({
      url: url,
      token: token,
      app: true,
      src: view.src,
      allow: view.allow || "",
      iframe: iframe,
      statusElement: entry.box,
      initialDelay: 100,
      maxAttempts: 8,
    });
  }

  function disconnect(entry) {
    if (entry.relay) entry.relay.close();
    if (entry.iframe) entry.iframe.remove();
    entry.relay = entry.iframe = null;
  }

  // Why it failed (the host's reason: initialize timeout, bad HTML, CSP...), then what
  // the tool said (it may come later), so nobody has to guess from a blank box.
  function showError(entry, view) {
    disconnect(entry);
    var reason = entry.box.querySelector(".reason");
    if (!reason) {
      reason = entry.box.appendChild(el("div", "reason error"));
      reason.setAttribute("role", "alert");
      entry.box.appendChild(el("div", "fallback"));
    }
    reason.textContent = "The view could not be shown: " + (view.error || "no reason given");
    entry.box.querySelector(".fallback").textContent = view.fallback || "";
  }

  // away: the element that steps aside while the view is not inline; elsewhere: where a
  // full-screen view is, in words.
  function showMode(entry, view, away, elsewhere) {
    var mode = view.displayMode;
    entry.box.classList.toggle("border", view.border === true);
    entry.box.classList.toggle("fullscreen", mode === "fullscreen");
    entry.box.classList.toggle("pip", mode === "pip");
    away.classList.toggle("away", mode !== "inline");
    entry.placeholder.textContent = view.title + " is shown " + (mode === "pip" ? "in the corner" : elsewhere);
    Array.prototype.forEach.call(entry.modes.children, function (button) {
      var usable = (view.displayModes || ["inline"]).indexOf(button.dataset.mode) >= 0;
      button.disabled = !usable;
      button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
    });
  }

  function summary(message) {
    var rpc = message || {};
    var what = rpc.method || ("id" in rpc ? (rpc.error ? "error" : "result") : "?");
    if ("id" in rpc && rpc.id !== null && rpc.id !== undefined) what += " #" + rpc.id;
    return what;
  }

  window.AssistantFramesViewBox = {
    connect: connect,
    disconnect: disconnect,
    showError: showError,
    showMode: showMode,
    summary: summary,
  };
})();
