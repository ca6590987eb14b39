/*
 * assistant-frames window.openai runtime: ChatGPT's Apps SDK widget API over MCP Apps
 * JSON-RPC, so a widget written for ChatGPT runs unchanged in any MCP Apps host (the
 * assistant-frames AppBridge, the ext-apps AppBridge...).
 *
 *   <script src="/assistant-frames/openai-runtime.js" data-timeout="30000"></script>
 *   <script>
 *     window.addEventListener("openai:set_globals", (e) => render(e.detail.globals));
 *     window.openai.callTool("refresh", { city: "Paris" });
 *   </script>
 *
 * Load it before the widget's own script: window.openai exists at once (with
 * defaults) and the handshake (ui/initialize, then ui/notifications/initialized)
 * starts with the parent window. Methods called earlier wait for it.
 *
 * Globals: theme, locale, displayMode, maxHeight, safeArea, userAgent (from the host
 * context), view and widgetState (from the open host context keys "view" and
 * "widgetState", when a host sends them), toolInput (ui/notifications/tool-input),
 * toolOutput and toolResponseMetadata (structuredContent and _meta of
 * ui/notifications/tool-result). A change dispatches "openai:set_globals" on window
 * with detail {globals: {...the changed ones}}.
 *
 * Methods and what they send:
 *   callTool(name, args)                   tools/call -> the CallToolResult
 *   sendFollowUpMessage({prompt})          ui/message (scrollToBottom has no equivalent)
 *   requestDisplayMode({mode})             ui/request-display-mode -> {mode}
 *   requestClose()                         ui/notifications/request-teardown
 *   openExternal({href})                   ui/open-link (redirectUrl has no equivalent)
 *   notifyIntrinsicHeight(height)          ui/notifications/size-changed
 *   setWidgetState(state)                  ui/update-model-context {structuredContent:
 *                                          {widgetState}} and x-assistant-frames/widget-state
 * and, where MCP Apps has no request, the extension family "x-assistant-frames/"
 * (answered by hosts that implement it, e.g. AppBridge(extensions=...); any other
 * host answers -32601 and the promise rejects saying the host does not support it):
 *   requestModal(options)                  x-assistant-frames/modal
 *   uploadFile(file)                       x-assistant-frames/upload-file {name, mimeType, data (base64)}
 *   selectFiles(options)                   x-assistant-frames/select-files
 *   getFileDownloadUrl({fileId})           x-assistant-frames/file-download-url
 *   setOpenInAppUrl({href})                x-assistant-frames/open-in-app-url
 *
 * Every request is bounded: without an answer in `timeout` ms (30 s by default; the
 * script tag's data-timeout, or window.assistantFramesOpenAI = {timeout} set before
 * it) its promise rejects with error.code "timeout". Errors carry `code` (the
 * JSON-RPC code, -32601 for an unsupported method) and `method`.
 */
(function () {
  "use strict";
  if (window.openai && window.openai.__assistantFrames) return;

  var PROTOCOL_VERSION = "2026-01-26";
  var EXT = "x-assistant-frames/";
  var METHOD_NOT_FOUND = -32601;
  var script = document.currentScript;
  var config = window.assistantFramesOpenAI || {};
  var timeout = Number(config.timeout || (script && script.dataset.timeout) || 30000);
  var appInfo = config.appInfo || { name: document.title || "openai-widget", version: "0.0.0" };
  var host = window.parent;

  var nextId = 1;
  var pending = {}; // id -> {resolve, reject, timer}
  var hostContext = {};
  var globals = {
    theme: "light",
    locale: navigator.language || "en-US",
    displayMode: "inline",
    maxHeight: null,
    safeArea: { insets: { top: 0, bottom: 0, left: 0, right: 0 } },
    userAgent: { device: { type: "unknown" }, capabilities: { hover: true, touch: false } },
    view: { mode: "inline", params: null },
    toolInput: {},
    toolOutput: null,
    toolResponseMetadata: null,
    widgetState: null,
  };

  function fail(message, code, method) {
    var error = new Error(message);
    error.code = code;
    error.method = method;
    return error;
  }

  function post(message) {
    message.jsonrpc = "2.0";
    host.postMessage(message, "*");
  }

  // A request to the host; `api` names the window.openai method for the errors.
  function request(method, params, api) {
    return new Promise(function (resolve, reject) {
      var id = "openai-" + nextId++;
      var timer = setTimeout(function () {
        delete pending[id];
        reject(fail("window.openai." + api + ": no answer from the host to " + method +
                    " within " + timeout + " ms", "timeout", method));
      }, timeout);
      pending[id] = { resolve: resolve, reject: reject, timer: timer, method: method, api: api };
      post({ id: id, method: method, params: params || {} });
    });
  }

  function notify(method, params) {
    post({ method: method, params: params || {} });
  }

  function settle(message) {
    var call = pending[message.id];
    if (!call) return;
    delete pending[message.id];
    clearTimeout(call.timer);
    if (message.error && typeof message.error === "object") {
      var code = message.error.code;
      var text = String(message.error.message || "error");
      call.reject(code === METHOD_NOT_FOUND
        ? fail("window.openai." + call.api + " is not supported by this host (" + call.method +
               ": " + text + ")", code, call.method)
        : fail("window.openai." + call.api + ": " + text, code, call.method));
    } else {
      call.resolve(message.result || {});
    }
  }

  function setGlobals(changes) {
    var changed = {};
    var any = false;
    Object.keys(changes).forEach(function (key) {
      if (JSON.stringify(globals[key]) !== JSON.stringify(changes[key])) {
        globals[key] = changes[key];
        changed[key] = changes[key];
        any = true;
      }
    });
    if (any) {
      window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: changed } }));
    }
  }

  function fromContext(context) {
    var out = {};
    if (context.theme) out.theme = context.theme;
    if (context.locale) out.locale = context.locale;
    if (context.displayMode) out.displayMode = context.displayMode;
    var size = context.containerDimensions;
    if (size && "maxHeight" in size) out.maxHeight = size.maxHeight;
    if (context.safeAreaInsets) out.safeArea = { insets: context.safeAreaInsets };
    if (context.platform || context.deviceCapabilities) {
      var caps = context.deviceCapabilities || {};
      var platform = context.platform;
      out.userAgent = {
        device: { type: platform === "mobile" ? "mobile" : platform ? "desktop" : "unknown" },
        capabilities: { hover: caps.hover !== false, touch: !!caps.touch },
      };
    }
    if ("view" in context) out.view = context.view;
    if ("widgetState" in context) out.widgetState = context.widgetState;
    return out;
  }

  function mergeContext(changes) {
    Object.keys(changes).forEach(function (key) { hostContext[key] = changes[key]; });
    setGlobals(fromContext(hostContext));
  }

  function onHostRequest(message) {
    if (message.method === "ui/resource-teardown" || message.method === "ping") {
      post({ id: message.id, result: {} });
    } else {
      post({ id: message.id, error: { code: METHOD_NOT_FOUND,
        message: "Method not found: " + message.method + " (a window.openai widget has no " +
                 "tools of its own)" } });
    }
  }

  function onNotification(message) {
    var params = message.params === undefined ? {} : message.params;
    if (!params || typeof params !== "object" || Array.isArray(params)) return; // malformed
    if (message.method === "ui/notifications/tool-input") {
      setGlobals({ toolInput: params.arguments || {} });
    } else if (message.method === "ui/notifications/tool-result") {
      setGlobals({
        toolOutput: params.structuredContent === undefined ? null : params.structuredContent,
        toolResponseMetadata: params._meta === undefined ? null : params._meta,
      });
    } else if (message.method === "ui/notifications/host-context-changed") {
      mergeContext(params);
    }
  }

  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source !== host || !message || typeof message !== "object") return;
    if (message.jsonrpc !== "2.0") return;
    try {
      if (typeof message.method === "string") {
        if (message.id !== undefined && message.id !== null) onHostRequest(message);
        else onNotification(message);
      } else if (message.id !== undefined) {
        settle(message);
      }
    } catch (error) {
      console.warn("window.openai: ignored a message it could not handle", error);
    }
  });

  var ready = request("ui/initialize", {
    protocolVersion: PROTOCOL_VERSION,
    appInfo: appInfo,
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen", "pip"] },
  }, "ready").then(function (result) {
    runtime.hostInfo = result.hostInfo || null;
    runtime.hostCapabilities = result.hostCapabilities || {};
    notify("ui/notifications/initialized");
    mergeContext(result.hostContext || {});
  });
  ready.catch(function (error) { console.warn("window.openai: handshake failed", error); });

  // After the handshake, one request; its result passed through `then`.
  function call(api, method, params, then) {
    return ready.then(function () {
      return request(method, params, api);
    }).then(then || function (result) { return result; });
  }

  function notOk(api, result) {
    if (result && result.isError) throw fail("window.openai." + api + ": the host refused", "refused", api);
    return undefined;
  }

  function base64(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(String(reader.result).replace(/^data:[^,]*,/, "")); };
      reader.onerror = function () { reject(reader.error); };
      reader.readAsDataURL(file);
    });
  }

  var runtime = {
    __assistantFrames: true,
    /** Resolves once the host answered ui/initialize (rejects if it never does). */
    ready: ready,
    hostInfo: null,
    hostCapabilities: null,
    get timeout() { return timeout; },
    set timeout(ms) { timeout = Number(ms); },

    callTool: function (name, args) {
      return call("callTool", "tools/call", { name: name, arguments: args || {} });
    },
    sendFollowUpMessage: function (options) {
      var prompt = typeof options === "string" ? options : options && options.prompt;
      return call("sendFollowUpMessage", "ui/message",
        { role: "user", content: [{ type: "text", text: String(prompt) }] },
        function (result) { return notOk("sendFollowUpMessage", result); });
    },
    requestDisplayMode: function (options) {
      return call("requestDisplayMode", "ui/request-display-mode", { mode: options && options.mode });
    },
    requestClose: function () {
      return ready.then(function () { notify("ui/notifications/request-teardown"); });
    },
    openExternal: function (options) {
      var href = typeof options === "string" ? options : options && options.href;
      return call("openExternal", "ui/open-link", { url: String(href) },
        function (result) { return notOk("openExternal", result); });
    },
    notifyIntrinsicHeight: function (height) {
      return ready.then(function () {
        notify("ui/notifications/size-changed",
          { width: document.documentElement.scrollWidth, height: Number(height) });
      });
    },
    setWidgetState: function (state) {
      setGlobals({ widgetState: state });
      var model = call("setWidgetState", "ui/update-model-context",
        { structuredContent: { widgetState: state } });
      var kept = call("setWidgetState", EXT + "widget-state", { state: state });
      // Either is enough: the model sees it, or the host keeps it for the next render.
      return Promise.allSettled([model, kept]).then(function (outcomes) {
        if (outcomes.every(function (o) { return o.status === "rejected"; })) throw outcomes[0].reason;
        return undefined;
      });
    },
    requestModal: function (options) {
      return call("requestModal", EXT + "modal", options || {});
    },
    uploadFile: function (file) {
      return base64(file).then(function (data) {
        return call("uploadFile", EXT + "upload-file",
          { name: file.name || "file", mimeType: file.type || "application/octet-stream", data: data });
      });
    },
    selectFiles: function (options) {
      return call("selectFiles", EXT + "select-files", options || {});
    },
    getFileDownloadUrl: function (options) {
      return call("getFileDownloadUrl", EXT + "file-download-url", options || {});
    },
    setOpenInAppUrl: function (options) {
      var href = typeof options === "string" ? options : options && options.href;
      return call("setOpenInAppUrl", EXT + "open-in-app-url", { href: String(href) },
        function () { return undefined; });
    },
  };
  Object.keys(globals).forEach(function (key) {
    Object.defineProperty(runtime, key, { enumerable: true, get: function () { return globals[key]; } });
  });
  window.openai = runtime;
})();
