// A real ext-apps AppBridge (2.0.4) hosting a window.openai widget directly: the widget's
// iframe (another origin) loads the shipped widget-runtime.js, which speaks MCP Apps
// JSON-RPC to this bridge. Bundled by esbuild at test time (conftest.py).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const config = new URLSearchParams(window.location.hash.replace(/^#/, ""));
const log = {
  initialized: 0,
  messages: [],
  links: [],
  displayModes: [],
  modelContext: [],
  sizes: [],
  teardownRequests: 0,
  toolCalls: [],
  errors: [],
};

const iframe = document.createElement("iframe");
iframe.src = config.get("src");
iframe.sandbox = "allow-scripts allow-same-origin";

const bridge = new AppBridge(
  null,
  { name: "ext-apps-host", version: "2.0.4-test" },
  { openLinks: {}, serverTools: {}, message: { text: {} }, updateModelContext: { text: {} } },
  {
    hostContext: {
      theme: "dark",
      displayMode: "inline",
      locale: "de-DE",
      platform: "mobile",
      deviceCapabilities: { touch: true, hover: false },
      containerDimensions: { maxHeight: 480 },
      safeAreaInsets: { top: 1, bottom: 2, left: 3, right: 4 },
    },
  },
);
bridge.oninitialized = () => {
  log.initialized += 1;
};
bridge.onmessage = async (params) => {
  log.messages.push(params);
  return {};
};
bridge.onopenlink = async (params) => {
  log.links.push(params);
  return {};
};
bridge.onrequestdisplaymode = async (params) => {
  log.displayModes.push(params);
  return { mode: params.mode };
};
bridge.onupdatemodelcontext = async (params) => {
  log.modelContext.push(params);
  return {};
};
bridge.onsizechange = (params) => log.sizes.push(params);
bridge.onrequestteardown = () => {
  log.teardownRequests += 1;
};
bridge.oncalltool = async (params) => {
  log.toolCalls.push(params);
  return { content: [{ type: "text", text: "ok" }], structuredContent: { echoed: params.arguments } };
};
bridge.onerror = (error) => log.errors.push(String(error));

// Listening before the widget loads: its runtime sends ui/initialize at once.
document.body.appendChild(iframe);
bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));

window.hostTest = {
  log,
  sendToolInput: (args) => bridge.sendToolInput({ arguments: args }),
  sendToolResult: (result) => bridge.sendToolResult(result),
  setHostContext: (context) => bridge.setHostContext(context),
};
