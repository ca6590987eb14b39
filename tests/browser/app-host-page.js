// A real ext-apps AppBridge (MCP Apps host side): bundled by esbuild at test time
// (tests/browser/conftest.py). Its "view" iframe is the assistant-frames child relay, which
// bridges the view's JSON-RPC to a Python App over a WebSocket.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const config = new URLSearchParams(window.location.hash.replace(/^#/, ""));
const log = {
  initialized: 0,
  messages: [],
  sizes: [],
  logs: [],
  serverCalls: [],
  teardownRequests: 0,
  toolListChanges: 0,
  errors: [],
  relay: [],
};

const iframe = document.createElement("iframe");
const relayParams = new URLSearchParams();
relayParams.set("ws", `ws://${window.location.host}/`);
relayParams.set("access_token", config.get("access_token") || "");
iframe.id = "relay";
iframe.src = `/assistant-frames/child-relay.html#${relayParams}`;

window.addEventListener("message", (event) => {
  if (event.source !== iframe.contentWindow) return;
  if (event.data?.channel === "assistant-frames-relay") log.relay.push(event.data.message);
});

// No MCP client: the view's server requests are answered by the handlers below.
const bridge = new AppBridge(
  null,
  { name: "js-app-host", version: "2.0.4-test" },
  { openLinks: {}, logging: {}, serverTools: {}, message: { text: {} } },
  {
    hostContext: { theme: "dark", displayMode: "inline", locale: "fr-FR", platform: "web" },
  },
);
bridge.oninitialized = () => {
  log.initialized += 1;
};
bridge.onmessage = async (params) => {
  log.messages.push(params);
  return {};
};
bridge.onsizechange = (params) => log.sizes.push(params);
bridge.onloggingmessage = (params) => log.logs.push(params);
bridge.onrequestteardown = () => {
  log.teardownRequests += 1;
};
bridge.oncalltool = async (params) => {
  log.serverCalls.push(params);
  return { content: [{ type: "text", text: `server ran ${params.name}` }] };
};
bridge.onerror = (error) => log.errors.push(String(error));
bridge.setNotificationHandler("notifications/tools/list_changed", () => {
  log.toolListChanges += 1;
});

document.body.appendChild(iframe);
const connected = bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));

window.appHostTest = {
  log,
  connected: () => connected.then(() => true),
  appInfo: () => bridge.getAppVersion() ?? null,
  appCapabilities: () => bridge.getAppCapabilities() ?? null,
  setHostContext: (context) => bridge.setHostContext(context),
  listTools: () => bridge.listTools({}),
  callTool: (name, args) => bridge.callTool({ name, arguments: args }),
  teardown: () => bridge.teardownResource({}),
};
