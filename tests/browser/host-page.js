// A real @assistant-ui/core host: bundled by esbuild at test time (tests/browser/conftest.py).
// It embeds the assistant-frames child relay and, once the relay says its WebSocket is open,
// creates an AssistantFrameHost on it.
import { AssistantFrameHost } from "@assistant-ui/core";

const config = new URLSearchParams(window.location.hash.replace(/^#/, ""));
const relayEvents = [];
let host = null;
let changes = 0;
const waiters = [];
const outcomes = [];
const kept = new Map();

function snapshot() {
  const context = host ? host.getModelContext() : {};
  const tools = {};
  for (const [name, tool] of Object.entries(context.tools || {})) {
    tools[name] = {
      description: tool.description ?? null,
      parameters: tool.parameters ?? null,
      disabled: tool.disabled ?? null,
    };
  }
  return { system: context.system ?? null, tools };
}

const iframe = document.createElement("iframe");
const relayParams = new URLSearchParams();
relayParams.set("ws", `ws://${window.location.host}${config.get("path") || "/"}`);
for (const key of ["access_token", "max_attempts", "initial_delay", "max_delay", "jsonrpc"]) {
  if (config.has(key)) relayParams.set(key, config.get(key));
}

window.addEventListener("message", (event) => {
  if (event.source !== iframe.contentWindow || event.origin !== window.location.origin) return;
  if (event.data?.channel !== "assistant-frames-relay") return;
  relayEvents.push(event.data.message);
  if (event.data.message.type === "ready" && host === null) {
    host = new AssistantFrameHost(iframe.contentWindow);
    host.subscribe(() => {
      changes += 1;
      for (const resolve of waiters.splice(0)) resolve(snapshot());
    });
  }
});

iframe.src = `/assistant-frames/child-relay.html#${relayParams}`;
iframe.id = "relay";
document.body.appendChild(iframe);

window.hostTest = {
  ready: () => host !== null,
  relayEvents: () => relayEvents.slice(),
  changes: () => changes,
  context: snapshot,
  // Resolves with the context at the next subscribe notification (rejects after 10 s).
  nextChange: () =>
    new Promise((resolve, reject) => {
      waiters.push(resolve);
      setTimeout(() => reject(new Error("no context change within 10 s")), 10000);
    }),
  // Bounded: the JS host sends tool-cancel and rejects if Python takes longer than ms.
  async call(name, args, ms = 10000, useKept = false) {
    const tool = useKept ? kept.get(name) : host.getModelContext().tools?.[name];
    if (!tool) return { error: `no tool ${name} in the JS host` };
    try {
      const abortSignal = AbortSignal.timeout(ms);
      const result = await tool.execute(args, { toolCallId: "js-test", abortSignal });
      return { result };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  },
  // A call that runs on while the test does other things: begin() returns its index,
  // outcome(index) is null until it settles, then the call's outcome and its duration.
  begin(name, args, ms = 10000, useKept = false) {
    const index = outcomes.length;
    const started = performance.now();
    outcomes.push(null);
    window.hostTest.call(name, args, ms, useKept).then((outcome) => {
      outcomes[index] = { ...outcome, ms: performance.now() - started };
    });
    return index;
  },
  outcome: (index) => outcomes[index],
  // A tool as the JS host had it now, to call after its context changed: keep(name),
  // then begin(name, args, ms, true).
  keep(name) {
    kept.set(name, host.getModelContext().tools?.[name]);
    return kept.get(name) !== undefined;
  },
  // 0.3.35's frameLoaded(); false where the release has none.
  frameLoaded() {
    if (typeof host.frameLoaded !== "function") return false;
    host.frameLoaded();
    return true;
  },
};
