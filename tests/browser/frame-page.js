// A real @assistant-ui/core frame: bundled by esbuild at test time (tests/browser/conftest.py)
// and loaded in an iframe whose parent is the assistant-frames parent relay.
import { AssistantFrameProvider, ModelContextRegistry } from "@assistant-ui/core";
import { z } from "zod";

const registry = new ModelContextRegistry();
const aborts = [];
const started = [];
const handles = new Map();

registry.addInstruction("You can add numbers with the add tool.");

registry.addTool({
  toolName: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b,
});

registry.addTool({
  toolName: "fail",
  description: "Always throws.",
  parameters: z.object({}),
  execute: async () => {
    throw new Error("boom from iframe");
  },
});

registry.addTool({
  toolName: "slow",
  description: "Waits until aborted (or 20 s).",
  parameters: z.object({}),
  execute: (_args, { toolCallId, abortSignal }) =>
    new Promise((resolve, reject) => {
      started.push(toolCallId);
      const timer = setTimeout(() => resolve("finished"), 20000);
      abortSignal.addEventListener("abort", () => {
        clearTimeout(timer);
        aborts.push(toolCallId);
        reject(new Error("aborted"));
      });
    }),
});

AssistantFrameProvider.addModelContextProvider(registry);

window.frameTest = {
  addTool(name, description) {
    handles.set(
      name,
      registry.addTool({
        toolName: name,
        description,
        parameters: z.object({ x: z.number() }),
        execute: async ({ x }) => x * 10,
      }),
    );
  },
  removeTool(name) {
    handles.get(name).remove();
    handles.delete(name);
  },
  aborts: () => [...aborts],
  started: () => [...started],
  // This page's document (0.3.35 draws one per load; undefined before 0.3.35).
  documentId: () => AssistantFrameProvider._instance?._documentId,
  dispose: () => AssistantFrameProvider.dispose(),
};
document.documentElement.setAttribute("data-frame-ready", "true");
