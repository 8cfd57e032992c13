// Scenario logql-query: LogQL queries of the lines the run pushes, while it pushes, against Loki
// directly (<LOAD_TARGET>/loki/api/v1/query and query_range; TLS verified as loki-push's). Two
// k6 scenarios: `query` at the run's rate (queries per minute) and executor, each iteration a
// probe line and its queries, every answer checked against what the VU had pushed by then
// (see lib/logql.js); `push` at LOAD_PUSH_RATE lines per minute, the requests of loki-push
// (see lib/loki.js). Parameterised only through LOAD_* environment variables (lib/config.js).
import { readQueryConfig, optionsFor } from './lib/config.js';
import { buildBodyPool } from './lib/payload.js';
import { pushParts, buildPush } from './lib/loki.js';
import { queryParts, makeQuerier } from './lib/logql.js';
import { makeSender } from './lib/send.js';
import { summarize, textSummary } from './lib/summary.js';

const cfg = readQueryConfig(__ENV);
export const options = optionsFor(cfg);

const POOL_SIZE = 512;
const vu = __VU || 1;
const pool = buildBodyPool(POOL_SIZE, cfg.bodyMin, cfg.bodyMax, Math.random);
const pushed = pushParts(cfg, vu, pool);
const push = makeSender(cfg, `${cfg.target}/loki/api/v1/push`, 'application/json',
  (n, now) => buildPush(pushed, n, now),
  { sent: cfg.scenario.push.sent, accepted: cfg.scenario.push.accepted, units: cfg.linesPerPush,
    buckets: false, perIteration: 1 });
const query = makeQuerier(cfg, queryParts(cfg, vu, pool));

export function queryLines() {
  query(__ITER);
}

export function pushLines() {
  push(__ITER);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary, cfg) };
}
