// One Web Worker runs one instance of the simulator (unherd.wasm). The
// page sends it the compiled module with its first request ("init" only
// starts the instance, so that a spare worker is ready before it is
// needed), then one request at a time; it answers with progress messages
// and the result. The page cancels a run by
// terminating the worker.
"use strict";
importScripts("wasm_exec.js");

let started = null;

async function start(module) {
  const go = new Go();
  const instance = await WebAssembly.instantiate(module, go.importObject);
  // main defines unherdRun and unherdScenarios, then waits: run returns
  // control as soon as it blocks.
  go.run(instance);
}

self.onmessage = async (e) => {
  const { id, module, request } = e.data;
  try {
    if (!started) started = start(module);
    await started;
    if (request === "init") {
      self.postMessage({ id, type: "ready" });
      return;
    }
    if (request === "scenarios") {
      self.postMessage({ id, type: "scenarios", data: self.unherdScenarios() });
      return;
    }
    const t0 = performance.now();
    const answer = self.unherdRun(JSON.stringify(request), (done, total) =>
      self.postMessage({ id, type: "progress", done, total }));
    self.postMessage({ id, type: "done", answer, ms: performance.now() - t0 });
  } catch (err) {
    self.postMessage({ id, type: "error", message: String((err && err.message) || err) });
  }
};
