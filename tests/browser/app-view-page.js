// An MCP Apps view built on the real ext-apps `App` (2.0.4), for the browser tests: it
// runs in an iframe behind the parent relay (app mode) and talks to a Python AppBridge.
// It records what the host sent in `window.viewTest.state()` and lets the test drive the
// App's own requests through `window.viewTest`.
import { App, PostMessageTransport } from "@modelcontextprotocol/ext-apps";
import * as z from "zod";

const seen = {
  documentId: Math.random().toString(36).slice(2), // new for each load of the view
  cspViolations: [], // securitypolicyviolation events: {directive, blockedURI}
  connected: false,
  connectedAfterMs: null, // from the view's navigation start to a completed handshake
  connectError: null,
  toolInput: [],
  toolInputPartial: [],
  toolResult: [],
  toolCancelled: [],
  contextChanges: [],
  teardown: [],
  toolCalls: [],
};

const app = new App(
  { name: "view-under-test", version: "0.4.2" },
  { tools: { listChanged: true }, availableDisplayModes: ["inline", "fullscreen"] },
  { autoResize: false }, // size changes only when the test sends them
);

// Handlers before connect(): the host may send tool input right after the handshake.
app.ontoolinput = (params) => seen.toolInput.push(params);
app.ontoolinputpartial = (params) => seen.toolInputPartial.push(params);
app.ontoolresult = (params) => seen.toolResult.push(params);
app.ontoolcancelled = (params) => seen.toolCancelled.push(params);
app.onhostcontextchanged = (params) => seen.contextChanges.push(params);
app.onteardown = async (params) => {
  seen.teardown.push(params);
  return {};
};

// The view's own tool, which the host lists and calls (tools/list, tools/call).
app.registerTool(
  "add",
  {
    title: "Add",
    description: "Add two numbers in the view.",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
  },
  async ({ a, b }) => {
    seen.toolCalls.push({ name: "add", a, b });
    return { content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } };
  },
);

// Requests to the host resolve to {result} or {error: {code, message}}, never reject.
async function settle(promise) {
  try {
    return { result: await promise };
  } catch (error) {
    return { error: { code: error && error.code, message: String(error && error.message) } };
  }
}

window.viewTest = {
  state() {
    return JSON.parse(
      JSON.stringify({
        ...seen,
        hostInfo: app.getHostVersion() ?? null,
        hostCapabilities: app.getHostCapabilities() ?? null,
        hostContext: app.getHostContext() ?? null,
        origin: location.origin,
      }),
    );
  },
  sendMessage: (text) => settle(app.sendMessage({ role: "user", content: [{ type: "text", text }] })),
  updateModelContext: (params) => settle(app.updateModelContext(params)),
  callServerTool: (name, args) => settle(app.callServerTool({ name, arguments: args })),
  sendSizeChanged: (width, height) => settle(app.sendSizeChanged({ width, height })),
  registerTool(name, text) {
    app.registerTool(name, { description: `Returns ${JSON.stringify(text)}.` }, async () => {
      seen.toolCalls.push({ name });
      return { content: [{ type: "text", text }] };
    });
  },
  requestTeardown: () => settle(app.requestTeardown()),
  openLink: (url) => settle(app.openLink({ url })),
  requestDisplayMode: (mode) => settle(app.requestDisplayMode({ mode })),
  // fetch(url): {status} or {error} (what the view's CSP lets through).
  async fetchUrl(url) {
    try {
      return { status: (await fetch(url, { mode: "no-cors" })).status };
    } catch (error) {
      return { error: String(error && error.message) };
    }
  },
  // Posts a raw message to the parent (for the relay's checks).
  post(message) {
    setTimeout(() => window.parent.postMessage(message, "*"), 0);
  },
};

document.addEventListener("securitypolicyviolation", (event) =>
  seen.cspViolations.push({ directive: event.effectiveDirective, blockedURI: event.blockedURI }),
);

app.connect(new PostMessageTransport(window.parent, window.parent)).then(
  () => {
    seen.connected = true;
    seen.connectedAfterMs = performance.now();
  },
  (error) => {
    seen.connectError = String(error && error.message);
  },
);
