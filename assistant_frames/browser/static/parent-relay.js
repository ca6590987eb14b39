/*
 * assistant-frames parent relay: bridges a browser frame (an iframe running
 * @assistant-ui/core's AssistantFrameProvider) to a Python host over the
 * assistant-frames WebSocket transport.
 *
 *   <script src="/assistant-frames/parent-relay.js"><\/script>
 *   <script>
 *     AssistantFramesRelay.parent({
 *       url: "ws://127.0.0.1:8765/frames/calc", // the Python websocket_server
 *       token: "...",                          // sent as ?access_token=
 *       src: "/calc-frame.html",               // the frame; same origin as this page
 *     });
 *   <\/script>
 *
 * This page must be the iframe's parent and share its origin: the JS frame only
 * talks to its parent window, and by default only to its own origin. (MCP Apps
 * views are the opposite: another origin; see app mode below.)
 *
 * What it forwards:
 *   - WebSocket -> iframe: every JSON message, with postMessage(msg, ownOrigin),
 *     once the iframe has loaded (earlier ones wait in a bounded buffer);
 *   - iframe -> WebSocket: messages whose event.source is that iframe's window and
 *     whose event.origin is this page's origin, while the WebSocket is open, when
 *     they are JSON objects on one of the allowed channels (option channels,
 *     default ["assistant-ui-frame"]) or JSON-RPC 2.0 messages (objects whose
 *     jsonrpc is "2.0", as MCP Apps send; option jsonrpc, default true; false
 *     forwards channels only).
 * And, on each load of the iframe (a reload is a new document), when it bridges the
 * frame channel outside app mode, it tells the Python host over the WebSocket:
 * {"channel": "assistant-frames-relay", "message": {"type": "frame-loaded"}}; the
 * AssistantFrameHost then does what @assistant-ui/core's frameLoaded() does (asks for
 * the context with a fresh requestId, and forgets the old document if nothing answers).
 * Nothing else: messages from any other window or origin, on another channel
 * (never the relay's own "assistant-frames-relay", even with jsonrpc "2.0"), sent
 * while the socket is not open, or that have no JSON form, are dropped.
 *
 * MCP Apps views (option app: true). A view is untrusted code from an MCP server:
 *
 *   AssistantFramesRelay.parent({
 *     url: "ws://127.0.0.1:8765/apps/weather", token: "...",
 *     app: true,
 *     src: "http://localhost:8765/weather-view.html", // ANOTHER origin than this page
 *     viewOrigin: "http://localhost:8765",            // optional; default: src's origin
 *     permissions: { camera: {}, clipboardWrite: {} }, // the resource's _meta.ui.permissions
 *   });
 *
 * (Option allow, a string, is the iframe's allow attribute as the host computed it,
 * e.g. AppResource.allow in Python; it replaces the one built from permissions.)
 *
 * In app mode the relay
 *   - refuses (status "failed", console.error, no socket, no iframe) a view whose src
 *     or viewOrigin is this page's own origin, or is not http(s): a same-origin
 *     document with allow-scripts and allow-same-origin could lift its own sandbox;
 *   - gives the iframe sandbox="allow-scripts allow-same-origin" (option sandbox
 *     replaces it) and the permissions as its allow attribute ("camera; microphone;
 *     geolocation; clipboard-write", in that order, as ext-apps' buildAllowAttribute);
 *   - accepts messages only from that iframe's window AND the view origin, and posts
 *     only to the view origin (never "*"): if the view navigates elsewhere, nothing
 *     reaches it and nothing it sends is forwarded;
 *   - forwards JSON-RPC 2.0 only (option channels adds channels; jsonrpc is always on,
 *     unless wire is "aui", below);
 *   - reloads the view when the WebSocket reconnects: a new socket is a new host-side
 *     bridge, and a view initializes (ui/initialize) once per document.
 *
 * Widgets on the AUI_* wire (option wire: "aui", e.g. with app: true for a widget on
 * another origin running widget-runtime.js with data-wire="aui"): the relay forwards,
 * instead of JSON-RPC, the widget's objects whose type is AUI_METHOD_CALL or one of
 * the plan's older messages (ready, resize, action, addResult, error); option jsonrpc:
 * true forwards JSON-RPC as well. A WidgetHost on the Python side answers them.
 *
 * The iframe is created only once the WebSocket is open. Failed connections are
 * retried a bounded number of times with exponential backoff; then the relay
 * gives up: status "failed" (console.error, the data-relay-status attribute,
 * onStatus and an "assistant-frames-relay" event on window).
 *
 * Plain ES2020, no dependencies, no build step.
 */
(function () {
  "use strict";

  var RELAY_CHANNEL = "assistant-frames-relay";
  var FRAME_CHANNEL = "assistant-ui-frame";
  var MAX_BUFFERED = 1000;
  // What a widget on the AUI_* wire sends its host (assistant-ui's tool-UI plan).
  var AUI_TYPES = ["AUI_METHOD_CALL", "ready", "resize", "action", "addResult", "error"];
  // What the MCP Apps spec asks of web hosts for a view iframe.
  var APP_SANDBOX = "allow-scripts allow-same-origin";
  // McpUiResourcePermissions -> Permission Policy features, in ext-apps' order.
  var APP_PERMISSIONS = [
    ["camera", "camera"],
    ["microphone", "microphone"],
    ["geolocation", "geolocation"],
    ["clipboardWrite", "clipboard-write"],
  ];

  function withToken(url, token) {
    if (token === undefined || token === null || token === "") return url;
    var hashAt = url.indexOf("#");
    if (hashAt >= 0) url = url.slice(0, hashAt);
    var separator = url.indexOf("?") >= 0 ? "&" : "?";
    return url + separator + "access_token=" + encodeURIComponent(token);
  }

  function toJson(data) {
    try {
      var text = JSON.stringify(data);
      return typeof text === "string" ? text : null;
    } catch (error) {
      return null;
    }
  }

  // Whether a message from the bridged window may go to the WebSocket: a JSON object
  // on an allowed channel, a JSON-RPC 2.0 message (if jsonrpc), or an AUI_* widget
  // message (if aui); never one on the relay's own channel.
  function allowed(data, channels, jsonrpc, aui) {
    if (data === null || typeof data !== "object" || Array.isArray(data)) return false;
    if (data.channel === RELAY_CHANNEL) return false;
    if (jsonrpc && data.jsonrpc === "2.0") return true;
    if (aui && AUI_TYPES.indexOf(data.type) >= 0) return true;
    if (channels === "*") return true;
    return channels.indexOf(data.channel) >= 0;
  }

  // The origin of an http(s) URL (relative to this page), or null.
  function httpOrigin(url) {
    var parsed;
    try {
      parsed = new URL(url, window.location.href);
    } catch (error) {
      return null;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
    return parsed.origin;
  }

  // The iframe allow attribute for a view's permissions ("" for none).
  function allowAttribute(permissions) {
    if (permissions === undefined || permissions === null) return "";
    if (typeof permissions !== "object" || Array.isArray(permissions)) {
      throw new Error("AssistantFramesRelay.parent: options.permissions must be an object");
    }
    var known = APP_PERMISSIONS.map(function (pair) {
      return pair[0];
    });
    Object.keys(permissions).forEach(function (key) {
      if (known.indexOf(key) < 0) console.warn("[assistant-frames relay] unknown permission ignored: " + key);
    });
    return APP_PERMISSIONS.filter(function (pair) {
      return permissions[pair[0]];
    })
      .map(function (pair) {
        return pair[1];
      })
      .join("; ");
  }

  // Why a view may not be hosted (null when it may), and the origin it runs on.
  function checkView(options, ownOrigin) {
    var srcOrigin = httpOrigin(options.src);
    if (srcOrigin === null) return { reason: "the view src must be an http(s) URL: " + options.src };
    var viewOrigin = options.viewOrigin === undefined ? srcOrigin : httpOrigin(options.viewOrigin);
    if (viewOrigin === null) return { reason: "options.viewOrigin must be an http(s) origin: " + options.viewOrigin };
    if (srcOrigin === ownOrigin || viewOrigin === ownOrigin) {
      return {
        reason:
          "refusing to host an MCP Apps view on this page's own origin (" +
          ownOrigin +
          "): with allow-scripts allow-same-origin it could lift its own sandbox; serve it from another origin",
      };
    }
    return { reason: null, origin: viewOrigin };
  }

  function resolveElement(target, fallback) {
    if (!target) return fallback;
    if (typeof target === "string") return document.querySelector(target) || fallback;
    return target;
  }

  function parent(options) {
    options = options || {};
    if (!options.url) throw new Error("AssistantFramesRelay.parent: options.url is required");
    if (!options.src) throw new Error("AssistantFramesRelay.parent: options.src is required");
    var ownOrigin = window.location.origin;
    var app = options.app === true;
    var view = app ? checkView(options, ownOrigin) : { reason: null, origin: ownOrigin };
    var targetOrigin = view.origin; // the only origin we accept from and post to
    var allow = !app ? "" : typeof options.allow === "string" ? options.allow : allowAttribute(options.permissions);
    var maxAttempts = options.maxAttempts || 5;
    var initialDelay = options.initialDelay === undefined ? 250 : options.initialDelay;
    var maxDelay = options.maxDelay === undefined ? 4000 : options.maxDelay;
    var channels = options.channels || (app ? [] : [FRAME_CHANNEL]);
    var aui = options.wire === "aui";
    if (options.wire !== undefined && !aui && options.wire !== "mcp-apps") {
      throw new Error('AssistantFramesRelay.parent: options.wire must be "mcp-apps" or "aui"');
    }
    var jsonrpc = aui ? options.jsonrpc === true : app || options.jsonrpc !== false;
    // Loads worth telling the Python host about: a frame's, whose host tracks documents.
    var tellLoads = !app && (channels === "*" || channels.indexOf(FRAME_CHANNEL) >= 0);
    var statusElement = resolveElement(options.statusElement, document.documentElement);
    var socketUrl = withToken(options.url, options.token);

    var socket = null;
    var iframe = null;
    var iframeLoaded = false;
    var toIframe = [];
    var attempts = 0;
    var retryTimer = null;
    var stopped = false;
    var status = "new";

    function setStatus(next, detail) {
      status = next;
      if (statusElement) statusElement.setAttribute("data-relay-status", next);
      var info = Object.assign({ side: "parent", status: next, attempts: attempts }, detail || {});
      if (next === "failed") console.error("[assistant-frames relay] " + (info.reason || "failed"));
      if (typeof options.onStatus === "function") {
        try {
          options.onStatus(next, info);
        } catch (error) {
          console.error(error);
        }
      }
      window.dispatchEvent(new CustomEvent(RELAY_CHANNEL, { detail: info }));
    }

    function postToIframe(text) {
      var data;
      try {
        data = JSON.parse(text);
      } catch (error) {
        return; // not JSON: dropped
      }
      if (!iframeLoaded) {
        if (toIframe.length < MAX_BUFFERED) toIframe.push(data);
        return;
      }
      iframe.contentWindow.postMessage(data, targetOrigin);
    }

    // A new socket is a new bridge on the Python side: the view must initialize again.
    function reloadView() {
      iframeLoaded = false;
      toIframe = [];
      iframe.src = iframe.src;
      setStatus("iframe", { src: iframe.src, reload: true });
    }

    function openIframe() {
      if (iframe) return;
      if (options.iframe) {
        iframe = resolveElement(options.iframe, null); // an empty <iframe> (no src) to use
        if (!iframe) throw new Error("AssistantFramesRelay.parent: options.iframe not found");
      } else {
        iframe = document.createElement("iframe");
        if (options.title) iframe.title = options.title;
        if (options.sandbox !== undefined) iframe.setAttribute("sandbox", options.sandbox);
      }
      if (app) {
        // Set before src: sandbox and allow apply to the next navigation.
        iframe.setAttribute("sandbox", options.sandbox !== undefined ? options.sandbox : APP_SANDBOX);
        if (allow) iframe.setAttribute("allow", allow);
        else iframe.removeAttribute("allow");
      }
      iframe.addEventListener("load", function () {
        iframeLoaded = true;
        var pending = toIframe;
        toIframe = [];
        pending.forEach(function (data) {
          iframe.contentWindow.postMessage(data, targetOrigin);
        });
        if (tellLoads && socket && socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify({ channel: RELAY_CHANNEL, message: { type: "frame-loaded" } }));
        }
      });
      iframe.src = options.src; // loaded only now, so the frame never runs before the socket
      if (!options.iframe) resolveElement(options.container, document.body).appendChild(iframe);
      setStatus("iframe", { src: iframe.src });
    }

    function onWindowMessage(event) {
      if (!iframe || event.source !== iframe.contentWindow) return;
      if (event.origin !== targetOrigin) return;
      if (!allowed(event.data, channels, jsonrpc, aui)) return;
      if (!socket || socket.readyState !== WebSocket.OPEN) return;
      var text = toJson(event.data);
      if (text !== null) socket.send(text);
    }

    function scheduleRetry(reason) {
      if (stopped) return;
      if (attempts >= maxAttempts) {
        setStatus("failed", {
          reason: "could not connect to " + options.url + " after " + attempts + " attempts: " + reason,
        });
        return;
      }
      var delay = Math.min(maxDelay, initialDelay * Math.pow(2, Math.max(0, attempts - 1)));
      setStatus("retrying", { reason: reason, delay: delay });
      retryTimer = setTimeout(connect, delay);
    }

    function connect() {
      retryTimer = null;
      if (stopped) return;
      attempts += 1;
      setStatus("connecting");
      var opened = false;
      var current;
      try {
        current = new WebSocket(socketUrl);
      } catch (error) {
        scheduleRetry(String(error && error.message ? error.message : error));
        return;
      }
      socket = current;
      current.onopen = function () {
        opened = true;
        attempts = 0;
        setStatus("open");
        if (app && iframe) reloadView();
        else openIframe();
      };
      current.onmessage = function (event) {
        if (typeof event.data === "string") postToIframe(event.data);
      };
      current.onclose = function (event) {
        if (socket === current) socket = null;
        if (stopped) return;
        var reason = "closed with code " + event.code + (event.reason ? ": " + event.reason : "");
        if (opened) setStatus("closed", { reason: reason, code: event.code });
        scheduleRetry(reason);
      };
    }

    var handle = {
      get status() {
        return status;
      },
      get iframe() {
        return iframe;
      },
      /** The origin messages are accepted from and posted to. */
      get targetOrigin() {
        return targetOrigin;
      },
      close: function () {
        stopped = true;
        if (retryTimer !== null) clearTimeout(retryTimer);
        window.removeEventListener("message", onWindowMessage);
        if (socket) socket.close(1000, "relay closed");
        setStatus("stopped");
      },
    };

    if (view.reason !== null) {
      stopped = true;
      setStatus("failed", { reason: view.reason, refused: true });
      return handle;
    }
    window.addEventListener("message", onWindowMessage);
    connect();
    return handle;
  }

  var relay = (window.AssistantFramesRelay = window.AssistantFramesRelay || {});
  relay.parent = parent;
  relay.RELAY_CHANNEL = RELAY_CHANNEL;
  relay.AUI_TYPES = AUI_TYPES.slice();
})();
