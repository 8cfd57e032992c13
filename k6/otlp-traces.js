// Scenario otlp-traces: OTLP/HTTP JSON traces to <LOAD_TARGET>/v1/traces, T traces of S spans on
// average a request, each span with A attributes of Z characters (see lib/traces.js).
// Parameterised only through LOAD_* environment variables (see lib/config.js).
import { readTracesConfig, optionsFor } from './lib/config.js';
import { loremOfLength } from './lib/payload.js';
import { traceParts, buildTraces } from './lib/traces.js';
import { makeSender } from './lib/send.js';
import { summarize, textSummary } from './lib/summary.js';

const cfg = readTracesConfig(__ENV);
export const options = optionsFor(cfg);

const text = loremOfLength(cfg.attributeSize + 4096, Math.random);
const parts = traceParts(cfg, __VU || 1, text, Math.random);
const send = makeSender(cfg, `${cfg.target}/v1/traces`, 'application/json',
  (n, now) => buildTraces(parts, now));

export function sendTraces() {
  send(__ITER);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary, cfg) };
}
