/*
 * assistant-frames app page: renders what Python (assistant_frames.apps.AppPage) says.
 *
 * No protocol logic here. Over the control WebSocket ("page", beside this page) Python sends
 *   hello   {title, theme, displayModes, allowCalls, tools: [{name, title, description, inputSchema}]}
 *   view    {id, title, state, error, fallback, displayMode, displayModes, src?, socket?, allow?, border?}
 *   theme   {theme}            log {id, direction: "in"|"out", message}
 *   message {id, text}         link {id, url}         size {id, width, height}
 *   notice  {level, text}
 * and this page sends what the person does:
 *   call {tool, arguments, displayMode}   theme {theme}   display-mode {id, mode}   close {id}
 * Each view's iframe (another origin, sandboxed, with the allow attribute Python
 * computed) is bridged to its own WebSocket by the parent relay in app mode
 * (view-box.js, shared with the dev page).
 * A view changes display mode by CSS only: moving an iframe in the DOM reloads it.
 * Socket paths ("/page", a view's "/view/<id>") are relative to the page's own
 * directory, so the page works at / and mounted under a prefix (/apps/).
 *
 * window.appPage.state() reports what is shown, for tests. Plain ES2020.
 */
(function () {
  "use strict";

  var MAX_LOG = 500;
  var token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
  var pageBase = new URL(".", location.href);
  var ViewBox = window.AssistantFramesViewBox;
  var $ = function (id) {
    return document.getElementById(id);
  };
  var control = null;
  var attempts = 0;
  var tools = {};
  var views = {}; // id -> {item, box, iframe, relay, loads, last}
  var notices = [];
  var links = [];
  var logCount = 0;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A WebSocket URL for a path of the page's: "/page" at /apps/ is ws://host/apps/page.
  function socketUrl(path) {
    var url = new URL(String(path).replace(/^\/+/, ""), pageBase);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.hash = "";
    return url.href;
  }

  function send(message) {
    if (control && control.readyState === WebSocket.OPEN) control.send(JSON.stringify(message));
  }

  function setStatus(text) {
    $("status").textContent = text;
    document.body.setAttribute("data-page-status", text);
  }

  function notice(level, text) {
    notices.push({ level: level, text: text });
    var li = el("li", level, text);
    $("notices").prepend(li);
  }

  // -- tools -------------------------------------------------------------------------

  function showTools(list, allowCalls) {
    tools = {};
    var select = $("tool");
    var chosen = select.value;
    select.textContent = "";
    list.forEach(function (tool) {
      tools[tool.name] = tool;
      var option = el("option", null, tool.title === tool.name ? tool.name : tool.title + " (" + tool.name + ")");
      option.value = tool.name;
      select.appendChild(option);
    });
    if (tools[chosen]) select.value = chosen;
    $("call").disabled = !allowCalls || list.length === 0;
    describeTool();
  }

  function describeTool() {
    var tool = tools[$("tool").value];
    $("tool-description").textContent = tool ? tool.description : "No UI tools.";
  }

  // -- views -------------------------------------------------------------------------

  function modeButton(entry, mode) {
    var button = el("button", "mode", mode);
    button.type = "button";
    button.dataset.mode = mode;
    button.addEventListener("click", function () {
      send({ type: "display-mode", id: entry.id, mode: mode });
    });
    return button;
  }

  function createView(view) {
    var entry = { id: view.id, loads: 0, relay: null, iframe: null, last: view };
    entry.item = el("article", "item");
    entry.item.dataset.viewId = view.id;
    entry.placeholder = el("div", "placeholder");
    entry.box = el("div", "view-box");
    var bar = el("div", "view-bar");
    entry.titleNode = el("span", "view-title", view.title);
    entry.stateNode = el("span", "view-state");
    bar.appendChild(entry.titleNode);
    bar.appendChild(entry.stateNode);
    entry.modes = el("span", "modes");
    ["inline", "fullscreen", "pip"].forEach(function (mode) {
      entry.modes.appendChild(modeButton(entry, mode));
    });
    bar.appendChild(entry.modes);
    var close = el("button", "close", "close");
    close.type = "button";
    close.setAttribute("aria-label", "close " + view.title);
    close.addEventListener("click", function () {
      send({ type: "close", id: entry.id });
    });
    bar.appendChild(close);
    entry.box.appendChild(bar);
    entry.item.appendChild(entry.placeholder);
    entry.item.appendChild(entry.box);
    $("messages").appendChild(entry.item);
    views[view.id] = entry;
    return entry;
  }

  function removeView(entry) {
    if (entry.relay) entry.relay.close();
    entry.item.remove();
    delete views[entry.id];
  }

  function showView(view) {
    var entry = views[view.id];
    if (view.state === "closed") {
      if (entry) removeView(entry);
      return;
    }
    if (!entry) entry = createView(view);
    entry.last = view;
    entry.stateNode.textContent = view.state;
    if (view.state === "error") {
      ViewBox.showError(entry, view);
    } else {
      ViewBox.connect(entry, view, socketUrl(view.socket), token);
    }
    ViewBox.showMode(entry, view, entry.item, "in the panel");
  }

  // -- messages and the log ------------------------------------------------------------

  function logMessage(entry) {
    logCount += 1;
    var message = entry.message || {};
    var what = ViewBox.summary(message);
    var li = el("li", entry.direction);
    var details = el("details");
    details.appendChild(el("summary", null, "[" + entry.id + "] " + what));
    details.appendChild(el("pre", null, JSON.stringify(message, null, 1)));
    li.appendChild(details);
    var log = $("log");
    log.appendChild(li);
    while (log.children.length > MAX_LOG) log.firstChild.remove();
    log.parentElement.scrollTop = log.parentElement.scrollHeight;
  }

  function showLink(id, url) {
    links.push({ id: id, url: url });
    var li = el("li", "link", "The view asks to open ");
    var a = el("a", null, url);
    a.href = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    li.appendChild(a);
    $("notices").prepend(li);
  }

  function handle(message) {
    switch (message.type) {
      case "hello":
        document.title = message.title;
        $("title").textContent = message.title;
        applyTheme(message.theme);
        showTools(message.tools || [], message.allowCalls);
        break;
      case "view":
        showView(message);
        break;
      case "theme":
        applyTheme(message.theme);
        break;
      case "log":
        logMessage(message);
        break;
      case "message":
        $("messages").appendChild(el("div", "message", message.text));
        break;
      case "link":
        showLink(message.id, message.url);
        break;
      case "size":
        var entry = views[message.id];
        if (entry && entry.iframe && typeof message.height === "number" && message.height > 0) {
          entry.iframe.style.height = Math.min(Math.ceil(message.height), 2000) + "px";
        }
        break;
      case "notice":
        notice(message.level || "info", message.text);
        break;
    }
  }

  function applyTheme(theme) {
    if (theme !== "light" && theme !== "dark") return;
    document.body.setAttribute("data-theme", theme);
    $("theme").value = theme;
  }

  // -- the control socket ---------------------------------------------------------------

  function connect() {
    attempts += 1;
    setStatus("connecting");
    var socket = new WebSocket(socketUrl("page") + "?access_token=" + encodeURIComponent(token));
    control = socket;
    socket.onopen = function () {
      attempts = 0;
      setStatus("connected");
    };
    socket.onmessage = function (event) {
      var message;
      try {
        message = JSON.parse(event.data);
      } catch (error) {
        return;
      }
      if (message && typeof message === "object") handle(message);
    };
    socket.onclose = function () {
      if (control !== socket) return;
      control = null;
      if (attempts >= 8) {
        setStatus("disconnected");
        return;
      }
      setStatus("reconnecting");
      setTimeout(connect, Math.min(4000, 250 * Math.pow(2, attempts)));
    };
  }

  $("tool").addEventListener("change", describeTool);
  $("theme").addEventListener("change", function () {
    send({ type: "theme", theme: $("theme").value });
  });
  $("clear-log").addEventListener("click", function () {
    $("log").textContent = "";
  });
  $("call-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var args;
    try {
      args = JSON.parse($("arguments").value || "{}");
    } catch (error) {
      notice("error", "The arguments are not JSON: " + error.message);
      return;
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      notice("error", "The arguments must be a JSON object");
      return;
    }
    send({ type: "call", tool: $("tool").value, arguments: args, displayMode: $("call-mode").value });
  });

  window.appPage = {
    state: function () {
      var shown = {};
      Object.keys(views).forEach(function (id) {
        var entry = views[id];
        var rect = entry.iframe ? entry.iframe.getBoundingClientRect() : null;
        shown[id] = {
          state: entry.last.state,
          displayMode: entry.last.displayMode,
          loads: entry.loads,
          relay: entry.relay ? entry.relay.status : null,
          src: entry.iframe ? entry.iframe.src : null,
          sandbox: entry.iframe ? entry.iframe.getAttribute("sandbox") : null,
          allow: entry.iframe ? entry.iframe.getAttribute("allow") : null,
          rect: rect ? { x: rect.x, y: rect.y, width: rect.width, height: rect.height } : null,
          boxClass: entry.box.className,
          fallback: (entry.box.querySelector(".fallback") || {}).textContent || null,
          reason: (entry.box.querySelector(".reason") || {}).textContent || null,
        };
      });
      return {
        status: $("status").textContent,
        theme: document.body.getAttribute("data-theme"),
        tools: Object.keys(tools),
        views: shown,
        logCount: logCount,
        notices: notices.slice(),
        links: links.slice(),
        messages: Array.prototype.map.call(document.querySelectorAll(".message"), function (node) {
          return node.textContent;
        }),
      };
    },
  };

  if (!token) notice("error", "No token in this page's URL: open the URL the host printed.");
  connect();
})();
