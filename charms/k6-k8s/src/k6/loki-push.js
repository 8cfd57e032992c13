// Scenario loki-push: Loki's push API straight, JSON to <LOAD_TARGET>/loki/api/v1/push, S
// streams x L lines a request (see lib/loki.js). TLS is verified: the CA through
// SSL_CERT_FILE, the name through the target's host (LOAD_HOSTS maps it to an address).
// Parameterised only through LOAD_* environment variables (see lib/config.js).
import { readPushConfig, optionsFor } from './lib/config.js';
import { buildBodyPool } from './lib/payload.js';
import { pushParts, buildPush } from './lib/loki.js';
import { makeSender } from './lib/send.js';
import { summarize, textSummary } from './lib/summary.js';

const cfg = readPushConfig(__ENV);
export const options = optionsFor(cfg);

const POOL_SIZE = 512;
const pool = buildBodyPool(POOL_SIZE, cfg.bodyMin, cfg.bodyMax, Math.random);
const parts = pushParts(cfg, __VU || 1, pool);
const send = makeSender(cfg, `${cfg.target}/loki/api/v1/push`, 'application/json',
  (n, now) => buildPush(parts, n, now));

export function pushLines() {
  send(__ITER);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary, cfg) };
}
