/*
 * assistant-frames widget runtime: the two ChatGPT-style widget APIs, window.openai
 * (ChatGPT's Apps SDK) and window.aui (assistant-ui's tool-UI plan, the same API under
 * its own names), over either of two wires, so one widget runs unchanged in any host:
 *
 *   - "mcp-apps" (the default): MCP Apps JSON-RPC, for any MCP Apps host (the
 *     assistant-frames AppBridge, the ext-apps AppBridge...);
 *   - "aui": the plan's own postMessage messages, for an AUI_* host (the
 *     assistant-frames WidgetHost): AUI_METHOD_CALL out, AUI_SET_GLOBALS and
 *     AUI_METHOD_RESPONSE in, and {type: "ready"} once loaded.
 *
 *   <script src="/assistant-frames/widget-runtime.js" data-wire="aui" data-timeout="30000"><\/script>
 *   <script>
 *     window.addEventListener("aui:set_globals", (e) => render(e.detail.globals));
 *     window.aui.callTool("refresh", { city: "Paris" });
 *   <\/script>
 *
 * Load it before the widget's own script: window.openai and window.aui exist at once
 * (with defaults; an existing window.openai, such as ChatGPT's own, is left alone) and
 * the wire starts with the parent window. On "mcp-apps", methods called before the
 * handshake (ui/initialize, then ui/notifications/initialized) wait for it.
 * Options (window.assistantFramesWidget = {...} before the script, or the script tag's
 * data-* attributes): wire, timeout (ms), appInfo ({name, version}, mcp-apps only).
 *
 * Globals: theme, locale, displayMode, maxHeight, safeArea, userAgent, view,
 * toolInput, toolOutput, toolResponseMetadata, widgetState. On "aui" they are what
 * AUI_SET_GLOBALS carries, each message merged into what the widget has. On "mcp-apps":
 * the host context (maxHeight from containerDimensions, safeArea from safeAreaInsets,
 * userAgent from platform and deviceCapabilities, view and widgetState from the open
 * keys of those names, when a host sends them), toolInput from
 * ui/notifications/tool-input, toolOutput and toolResponseMetadata from the
 * structuredContent and _meta of ui/notifications/tool-result. A change dispatches
 * "openai:set_globals" and "aui:set_globals" on window, detail {globals: {...changed}}.
 * setWidgetState sets widgetState at once; a state the widget set before the host's
 * first globals (the ui/initialize answer, the first AUI_SET_GLOBALS) wins over the one
 * those carry, which the host read before the widget's request reached it.
 *
 * Methods. On "aui" each is one AUI_METHOD_CALL of the same name, its arguments as
 * args. On "mcp-apps":
 *   callTool(name, args)                   tools/call -> the CallToolResult
 *   sendFollowUpMessage({prompt})          ui/message (scrollToBottom has no equivalent)
 *   requestDisplayMode({mode})             ui/request-display-mode -> {mode}
 *   requestClose()                         ui/notifications/request-teardown
 *   openExternal({href})                   ui/open-link (redirectUrl has no equivalent)
 *   notifyIntrinsicHeight(height)          ui/notifications/size-changed (a number, else
 *                                          it rejects with code -32602)
 *   setWidgetState(state)                  ui/update-model-context {structuredContent:
 *                                          {widgetState}} and x-assistant-frames/widget-state;
 *                                          resolves if the host lacks one of them, rejects
 *                                          if it lacks both, or refuses or drops either
 * and, where MCP Apps has no request, the extension family "x-assistant-frames/"
 * (answered by hosts that implement it, e.g. AppBridge(extensions=...); any other
 * host answers -32601 and the promise rejects saying the host does not support it):
 *   requestModal(options)                  x-assistant-frames/modal
 *   uploadFile(file)                       x-assistant-frames/upload-file {name, mimeType, data (base64)}
 *   selectFiles(options)                   x-assistant-frames/select-files
 *   getFileDownloadUrl({fileId})           x-assistant-frames/file-download-url
 *   setOpenInAppUrl({href})                x-assistant-frames/open-in-app-url
 *
 * Every call is bounded: without an answer in `timeout` ms (30 s by default) its
 * promise rejects with error.code "timeout". Errors carry `code` (on "mcp-apps" the
 * JSON-RPC code, -32601 for an unsupported method; on "aui" "error", the plan's errors
 * being plain text) and `method`. Messages from any window but the parent, and
 * malformed ones, are ignored.
 */
(function () {
  "use strict";
  if (window.aui && window.aui.__assistantFrames) return;

  var PROTOCOL_VERSION = "2026-01-26";
  var EXT = "x-assistant-frames/";
  var METHOD_NOT_FOUND = -32601;
  var script = document.currentScript;
  var data = (script && script.dataset) || {};
  var config = window.assistantFramesWidget || {};
  var timeout = Number(config.timeout || data.timeout || 30000);
  var wireName = config.wire || data.wire || "mcp-apps";
  var appInfo = config.appInfo || { name: document.title || "widget", version: "0.0.0" };
  var host = window.parent;

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
  var events = []; // the set_globals event of each API installed
  var firstGlobals = true; // the host has not sent its first globals yet
  var stateSetEarly = false; // the widget set its state before they came

  function fail(message, code, method) {
    var error = new Error(message);
    error.code = code;
    error.method = method;
    return error;
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
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
    if (!any) return;
    events.forEach(function (name) {
      window.dispatchEvent(new CustomEvent(name, { detail: { globals: changed } }));
    });
  }

  // The host's first globals, less a widgetState older than the one the widget set.
  function firstFromHost(changes) {
    firstGlobals = false;
    if (!stateSetEarly) return changes;
    var out = {};
    Object.keys(changes).forEach(function (key) {
      if (key !== "widgetState") out[key] = changes[key];
    });
    return out;
  }

  // Calls waiting for an answer: id -> {resolve, reject, timer, method, api}.
  var nextId = 1;
  // No prototype: an answer's id such as "__proto__" or "constructor" finds no call.
  var pending = Object.create(null);

  // Sends `message` (built from the call's id) and waits, bounded, for settle(id, ...).
  function waitFor(api, method, message) {
    return new Promise(function (resolve, reject) {
      var id = "widget-" + nextId++;
      var timer = setTimeout(function () {
        delete pending[id];
        reject(fail(api + ": no answer from the host to " + method + " within " + timeout + " ms",
                    "timeout", method));
      }, timeout);
      pending[id] = { resolve: resolve, reject: reject, timer: timer, method: method, api: api };
      try {
        host.postMessage(message(id), "*");
      } catch (error) { // e.g. arguments that cannot be cloned
        settle(id, null, function () { return fail(api + ": " + error.message, "error", method); });
      }
    });
  }

  // The answer to call `id`: a result, or an error made by `error(call)`.
  function settle(id, result, error) {
    var call = pending[id];
    if (!call) return;
    delete pending[id];
    clearTimeout(call.timer);
    if (error) call.reject(error(call));
    else call.resolve(result);
  }

  function base64(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(String(reader.result).replace(/^data:[^,]*,/, "")); };
      reader.onerror = function () { reject(reader.error); };
      reader.readAsDataURL(file);
    });
  }

  function hrefOf(options) {
    return String(typeof options === "string" ? options : options && options.href);
  }

  // -- the MCP Apps wire ---------------------------------------------------------------

  function mcpAppsWire() {
    var hostContext = {};

    function post(message) {
      message.jsonrpc = "2.0";
      host.postMessage(message, "*");
    }

    function request(api, method, params) {
      return waitFor(api, method, function (id) {
        return { jsonrpc: "2.0", id: id, method: method, params: params || {} };
      });
    }

    function notify(method, params) {
      post({ method: method, params: params || {} });
    }

    function onAnswer(message) {
      if (!isObject(message.error)) {
        settle(message.id, message.result || {}, null);
        return;
      }
      var code = message.error.code;
      var text = String(message.error.message || "error");
      settle(message.id, null, function (call) {
        return code === METHOD_NOT_FOUND
          ? fail(call.api + " is not supported by this host (" + call.method + ": " + text + ")",
                 code, call.method)
          : fail(call.api + ": " + text, code, call.method);
      });
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

    // The host-context keys each global comes from.
    var SOURCES = {
      theme: ["theme"], locale: ["locale"], displayMode: ["displayMode"],
      maxHeight: ["containerDimensions"], safeArea: ["safeAreaInsets"],
      userAgent: ["platform", "deviceCapabilities"], view: ["view"], widgetState: ["widgetState"],
    };

    // Only the globals of keys that changed: a theme change must not bring back the
    // widgetState of ui/initialize over the one the widget has set since.
    function mergeContext(changes) {
      Object.keys(changes).forEach(function (key) { hostContext[key] = changes[key]; });
      var derived = fromContext(hostContext);
      var out = {};
      Object.keys(derived).forEach(function (name) {
        if (SOURCES[name].some(function (key) { return key in changes; })) out[name] = derived[name];
      });
      setGlobals(out);
    }

    function onHostRequest(message) {
      if (message.method === "ui/resource-teardown" || message.method === "ping") {
        post({ id: message.id, result: {} });
      } else {
        post({ id: message.id, error: { code: METHOD_NOT_FOUND,
          message: "Method not found: " + message.method + " (a widget has no tools of its own)" } });
      }
    }

    function onNotification(message) {
      var params = message.params === undefined ? {} : message.params;
      if (!isObject(params)) return; // malformed
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

    function onMessage(message) {
      if (message.jsonrpc !== "2.0") return;
      if (typeof message.method === "string") {
        if (message.id !== undefined && message.id !== null) onHostRequest(message);
        else onNotification(message);
      } else if (message.id !== undefined) {
        onAnswer(message);
      }
    }

    var wire = { name: "mcp-apps", onMessage: onMessage, hostInfo: null, hostCapabilities: null };
    wire.ready = request("widget runtime", "ui/initialize", {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: appInfo,
      appCapabilities: { availableDisplayModes: ["inline", "fullscreen", "pip"] },
    }).then(function (result) {
      wire.hostInfo = result.hostInfo || null;
      wire.hostCapabilities = result.hostCapabilities || {};
      notify("ui/notifications/initialized");
      mergeContext(firstFromHost(result.hostContext || {}));
    });

    // After the handshake, one request; its result passed through `then`.
    function call(api, method, params, then) {
      return wire.ready.then(function () {
        return request(api, method, params);
      }).then(then || function (result) { return result; });
    }

    function afterReady(send) {
      return wire.ready.then(function () { send(); });
    }

    function refusedIfError(api) {
      return function (result) {
        if (result && result.isError) throw fail(api + ": the host refused", "refused", api);
        return undefined;
      };
    }

    wire.methods = {
      callTool: function (api, name, args) {
        return call(api, "tools/call", { name: name, arguments: args || {} });
      },
      sendFollowUpMessage: function (api, options) {
        var prompt = typeof options === "string" ? options : options && options.prompt;
        return call(api, "ui/message", { role: "user", content: [{ type: "text", text: String(prompt) }] },
          refusedIfError(api));
      },
      requestDisplayMode: function (api, options) {
        return call(api, "ui/request-display-mode", { mode: options && options.mode });
      },
      requestClose: function () {
        return afterReady(function () { notify("ui/notifications/request-teardown"); });
      },
      openExternal: function (api, options) {
        return call(api, "ui/open-link", { url: hrefOf(options) }, refusedIfError(api));
      },
      notifyIntrinsicHeight: function (api, height) {
        // Not a number would go out as null (JSON has no NaN), a size the host cannot use.
        if (typeof height !== "number" || !isFinite(height)) {
          return Promise.reject(fail(api + ": the height must be a number of pixels, not " +
            JSON.stringify(height), -32602, "ui/notifications/size-changed"));
        }
        return afterReady(function () {
          notify("ui/notifications/size-changed",
            { width: document.documentElement.scrollWidth, height: height });
        });
      },
      setWidgetState: function (api, state) {
        var model = call(api, "ui/update-model-context", { structuredContent: { widgetState: state } });
        var kept = call(api, EXT + "widget-state", { state: state });
        // A host may lack either (-32601): the model sees the state, or the host keeps it
        // for the next render. But a host that refuses it (the state too large...) or never
        // answers must be heard: the widget would believe its state kept.
        return Promise.allSettled([model, kept]).then(function (outcomes) {
          var failed = outcomes.filter(function (o) { return o.status === "rejected"; });
          var refused = failed.filter(function (o) { return o.reason.code !== METHOD_NOT_FOUND; });
          if (refused.length) throw refused[refused.length - 1].reason; // both: the keeping one
          if (failed.length === outcomes.length) throw failed[0].reason;
          return undefined;
        });
      },
      requestModal: function (api, options) {
        return call(api, EXT + "modal", options || {});
      },
      uploadFile: function (api, file) {
        return base64(file).then(function (data) {
          return call(api, EXT + "upload-file",
            { name: file.name || "file", mimeType: file.type || "application/octet-stream", data: data });
        });
      },
      selectFiles: function (api, options) {
        return call(api, EXT + "select-files", options || {});
      },
      getFileDownloadUrl: function (api, options) {
        return call(api, EXT + "file-download-url", options || {});
      },
      setOpenInAppUrl: function (api, options) {
        return call(api, EXT + "open-in-app-url", { href: hrefOf(options) },
          function () { return undefined; });
      },
    };
    return wire;
  }

  // -- the plan's AUI_* wire -----------------------------------------------------------

  function auiWire() {
    var gotGlobals;
    var wire = { name: "aui", hostInfo: null, hostCapabilities: null };
    // Resolves with the first globals; calls do not wait for it (the plan has no handshake).
    wire.ready = new Promise(function (resolve, reject) {
      gotGlobals = resolve;
      setTimeout(function () {
        reject(fail("window.aui.ready: no AUI_SET_GLOBALS from the host within " + timeout + " ms",
                    "timeout", "ready"));
      }, timeout);
    });

    function methodCall(api, method, args) {
      return waitFor(api, method, function (id) {
        return { type: "AUI_METHOD_CALL", id: id, method: method, args: args };
      });
    }

    wire.onMessage = function (message) {
      if (message.type === "AUI_SET_GLOBALS") {
        if (!isObject(message.globals)) return; // malformed
        setGlobals(firstGlobals ? firstFromHost(message.globals) : message.globals);
        gotGlobals();
      } else if (message.type === "AUI_METHOD_RESPONSE" && typeof message.id === "string") {
        if (message.error === undefined || message.error === null) {
          settle(message.id, message.result === undefined ? null : message.result, null);
        } else {
          var text = String(message.error);
          settle(message.id, null, function (call) { return fail(call.api + ": " + text, "error", call.method); });
        }
      }
    };

    var names = ["callTool", "sendFollowUpMessage", "requestDisplayMode", "requestClose", "openExternal",
                 "notifyIntrinsicHeight", "setWidgetState", "requestModal", "selectFiles",
                 "getFileDownloadUrl", "setOpenInAppUrl"];
    wire.methods = {};
    names.forEach(function (method) {
      wire.methods[method] = function (api) {
        return methodCall(api, method, Array.prototype.slice.call(arguments, 1));
      };
    });
    wire.methods.setOpenInAppUrl = function (api, options) {
      return methodCall(api, "setOpenInAppUrl", [{ href: hrefOf(options) }]);
    };
    wire.methods.uploadFile = function (api, file) {
      return base64(file).then(function (data) {
        return methodCall(api, "uploadFile",
          [{ name: file.name || "file", mimeType: file.type || "application/octet-stream", data: data }]);
      });
    };
    host.postMessage({ type: "ready" }, "*");
    return wire;
  }

  if (wireName !== "mcp-apps" && wireName !== "aui") {
    console.error('widget runtime: unknown wire "' + wireName + '" (use "mcp-apps" or "aui"); using "mcp-apps"');
    wireName = "mcp-apps";
  }
  var wire = wireName === "aui" ? auiWire() : mcpAppsWire();
  wire.ready.catch(function (error) { console.warn("widget runtime: the host never answered", error); });

  window.addEventListener("message", function (event) {
    if (event.source !== host || !isObject(event.data)) return;
    try {
      wire.onMessage(event.data);
    } catch (error) {
      console.warn("widget runtime: ignored a message it could not handle", error);
    }
  });

  // One API object, e.g. window.aui: the globals as getters, the methods on the wire.
  function install(name) {
    var prefix = "window." + name + ".";
    var api = {
      __assistantFrames: true,
      /** Which wire this runtime speaks: "mcp-apps" or "aui". */
      wire: wire.name,
      /** Resolves once the host answered (mcp-apps: ui/initialize; aui: the first globals). */
      ready: wire.ready,
      get hostInfo() { return wire.hostInfo; },
      get hostCapabilities() { return wire.hostCapabilities; },
      get timeout() { return timeout; },
      set timeout(ms) { timeout = Number(ms); },
    };
    Object.keys(wire.methods).forEach(function (method) {
      api[method] = function () {
        var args = [prefix + method].concat(Array.prototype.slice.call(arguments));
        if (method === "setWidgetState") {
          var state = arguments[0] === undefined ? null : arguments[0];
          if (state !== null && !isObject(state)) {
            return Promise.reject(fail(prefix + method + ": the state must be an object or null",
                                       "invalid", method));
          }
          if (firstGlobals) stateSetEarly = true;
          setGlobals({ widgetState: state }); // the widget sees it at once, as in ChatGPT
        }
        return wire.methods[method].apply(null, args);
      };
    });
    Object.keys(globals).forEach(function (key) {
      Object.defineProperty(api, key, { enumerable: true, get: function () { return globals[key]; } });
    });
    window[name] = api;
    events.push(name + ":set_globals");
  }

  install("aui");
  if (!window.openai) install("openai"); // ChatGPT's own window.openai wins
})();
