/*
 * assistant-frames child relay: runs in an iframe that a JS AssistantFrameHost
 * (@assistant-ui/core) talks to, and bridges it to a Python frame served by the
 * assistant-frames WebSocket transport.
 *
 * Usually loaded by child-relay.html, which the host page embeds:
 *
 *   <iframe src="/assistant-frames/child-relay.html#ws=ws%3A%2F%2F127.0.0.1%3A8765&access_token=..."></iframe>
 *
 * or started by hand: AssistantFramesRelay.child({ url, token, parentOrigin }).
 *
 * The host page must be this iframe's parent and share its origin (the JS host,
 * by default, only accepts messages from its own origin), unless parentOrigin says
 * otherwise.
 *
 * What it forwards:
 *   - parent -> WebSocket: messages whose event.source is window.parent and whose
 *     event.origin is the parent origin, when they are JSON objects on one of the
 *     allowed channels (option channels, default ["assistant-ui-frame"]) or JSON-RPC
 *     2.0 messages (objects whose jsonrpc is "2.0", as MCP Apps send; option
 *     jsonrpc, default true; false forwards channels only). Messages that arrive
 *     before the WebSocket is open wait in a bounded buffer and are sent once it
 *     opens; after the relay gave up, they are dropped.
 *   - WebSocket -> parent: every JSON message, with
 *     window.parent.postMessage(msg, parentOrigin).
 * Nothing else: messages from any other window or origin, on another channel
 * (never the relay's own "assistant-frames-relay", even with jsonrpc "2.0"), and
 * messages that have no JSON form, are dropped.
 *
 * It tells the parent page how the connection goes on its own channel:
 *   { channel: "assistant-frames-relay", message: { type: "ready" } }    the socket is open:
 *                                                                      create the host now
 *   { channel: "assistant-frames-relay", message: { type: "closed", reason } }
 *   { channel: "assistant-frames-relay", message: { type: "failed", reason } }  gave up
 * After a reconnection it sends "ready" again and asks the new connection for the
 * frame's context (a model-context-request), so a host keeps receiving updates.
 *
 * Failed connections are retried a bounded number of times with exponential
 * backoff; then: status "failed" (console.error, the data-relay-status attribute of
 * <html>, onStatus, an "assistant-frames-relay" event on window, and the "failed"
 * message above).
 *
 * Plain ES2020, no dependencies, no build step.
 */
(function () {
  "use strict";

  var RELAY_CHANNEL = "assistant-frames-relay";
  var FRAME_CHANNEL = "assistant-ui-frame";
  var MAX_BUFFERED = 1000;
  var startScript = document.currentScript;

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
  // on an allowed channel, or (unless jsonrpc is false) a JSON-RPC 2.0 message; never
  // one on the relay's own channel.
  function allowed(data, channels, jsonrpc) {
    if (data === null || typeof data !== "object" || Array.isArray(data)) return false;
    if (data.channel === RELAY_CHANNEL) return false;
    if (jsonrpc && data.jsonrpc === "2.0") return true;
    if (channels === "*") return true;
    return channels.indexOf(data.channel) >= 0;
  }

  function child(options) {
    options = options || {};
    if (!options.url) throw new Error("AssistantFramesRelay.child: options.url is required");
    var parentWindow = window.parent;
    var parentOrigin = options.parentOrigin || window.location.origin;
    var maxAttempts = options.maxAttempts || 5;
    var initialDelay = options.initialDelay === undefined ? 250 : options.initialDelay;
    var maxDelay = options.maxDelay === undefined ? 4000 : options.maxDelay;
    var channels = options.channels || [FRAME_CHANNEL];
    var jsonrpc = options.jsonrpc !== false;
    var statusElement = options.statusElement || document.documentElement;
    var socketUrl = withToken(options.url, options.token);

    var socket = null;
    var toSocket = [];
    var attempts = 0;
    var connections = 0;
    var retryTimer = null;
    var stopped = false;
    var status = "new";

    function tellParent(message) {
      if (parentWindow && parentWindow !== window) {
        parentWindow.postMessage({ channel: RELAY_CHANNEL, message: message }, parentOrigin);
      }
    }

    function setStatus(next, detail) {
      status = next;
      if (statusElement) statusElement.setAttribute("data-relay-status", next);
      var info = Object.assign({ side: "child", status: next, attempts: attempts }, detail || {});
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

    function onWindowMessage(event) {
      if (event.source !== parentWindow || parentWindow === window) return;
      if (event.origin !== parentOrigin) return;
      if (!allowed(event.data, channels, jsonrpc)) return;
      var text = toJson(event.data);
      if (text === null) return;
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(text);
      } else if (status !== "failed" && toSocket.length < MAX_BUFFERED) {
        toSocket.push(text);
      }
    }

    function scheduleRetry(reason) {
      if (stopped) return;
      if (attempts >= maxAttempts) {
        var failure =
          "could not connect to " + options.url + " after " + attempts + " attempts: " + reason;
        toSocket = [];
        setStatus("failed", { reason: failure });
        tellParent({ type: "failed", reason: failure });
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
        connections += 1;
        if (connections > 1) {
          // A new connection is a new peer for the Python frame: ask it for the
          // context, so the host (which asked once, long ago) keeps getting updates.
          current.send(
            JSON.stringify({ channel: FRAME_CHANNEL, message: { type: "model-context-request" } })
          );
        }
        var pending = toSocket;
        toSocket = [];
        pending.forEach(function (text) {
          current.send(text);
        });
        setStatus("open");
        tellParent({ type: "ready" });
      };
      current.onmessage = function (event) {
        if (typeof event.data !== "string") return;
        var data;
        try {
          data = JSON.parse(event.data);
        } catch (error) {
          return; // not JSON: dropped
        }
        if (parentWindow && parentWindow !== window) parentWindow.postMessage(data, parentOrigin);
      };
      current.onclose = function (event) {
        if (socket === current) socket = null;
        if (stopped) return;
        var reason = "closed with code " + event.code + (event.reason ? ": " + event.reason : "");
        if (opened) {
          setStatus("closed", { reason: reason, code: event.code });
          tellParent({ type: "closed", reason: reason });
        }
        scheduleRetry(reason);
      };
    }

    if (!parentWindow || parentWindow === window) {
      setStatus("failed", { reason: "the child relay must run inside an iframe" });
      return { status: "failed", close: function () {} };
    }
    window.addEventListener("message", onWindowMessage);
    connect();

    return {
      get status() {
        return status;
      },
      close: function () {
        stopped = true;
        if (retryTimer !== null) clearTimeout(retryTimer);
        window.removeEventListener("message", onWindowMessage);
        if (socket) socket.close(1000, "relay closed");
        setStatus("stopped");
      },
    };
  }

  // Options from the page's URL: the fragment first (never sent to a server), then
  // the query string, then data-* attributes of the <script> tag or of <html>:
  //   ws (WebSocket URL), access_token, parent_origin, max_attempts, initial_delay, max_delay,
  //   jsonrpc ("false" or "0": forward the frame channel only)
  function optionsFromPage() {
    var params = new URLSearchParams(window.location.search);
    var hash = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    var datasets = [startScript ? startScript.dataset : {}, document.documentElement.dataset];
    function read(name, dataName) {
      if (hash.has(name)) return hash.get(name);
      if (params.has(name)) return params.get(name);
      for (var i = 0; i < datasets.length; i++) {
        if (datasets[i][dataName] !== undefined) return datasets[i][dataName];
      }
      return undefined;
    }
    function number(name, dataName) {
      var value = read(name, dataName);
      return value === undefined ? undefined : Number(value);
    }
    return {
      url: read("ws", "wsUrl"),
      token: read("access_token", "token"),
      parentOrigin: read("parent_origin", "parentOrigin"),
      maxAttempts: number("max_attempts", "maxAttempts"),
      initialDelay: number("initial_delay", "initialDelay"),
      maxDelay: number("max_delay", "maxDelay"),
      jsonrpc: ["false", "0"].indexOf(read("jsonrpc", "jsonrpc")) < 0,
    };
  }

  var relay = (window.AssistantFramesRelay = window.AssistantFramesRelay || {});
  relay.child = child;
  relay.childOptionsFromPage = optionsFromPage;
  relay.RELAY_CHANNEL = RELAY_CHANNEL;

  if (startScript && startScript.hasAttribute("data-autostart")) {
    var pageOptions = optionsFromPage();
    if (!pageOptions.url) {
      document.documentElement.setAttribute("data-relay-status", "failed");
      console.error("[assistant-frames relay] no WebSocket URL: give ?ws= or #ws=");
    } else {
      relay.instance = child(pageOptions);
    }
  }
})();
