// Run parameters from environment variables (LOAD_*), and the k6 options they imply.
// Every parameter has the same name, default and unit as loadgate's RunSpec and the k6 charm's
// start-load action; loadgate validates them before k6 starts, these checks guard direct use.
// The common parameters are read here for every scenario; each scenario reads its own
// (readConfig: otlp-logs; readMetricsConfig, readPushConfig, readTracesConfig,
// readQueryConfig) and says how many units one request carries.
import { OTLP_LOGS, OTLP_METRICS, LOKI_PUSH, OTLP_TRACES, LOGQL_QUERY } from './scenarios.js';

export const EXECUTORS = ['constant-vus', 'constant-arrival-rate', 'ramping-arrival-rate'];

function num(env, name, dflt) {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name}: must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

function int(env, name, dflt, min) {
  const value = num(env, name, dflt);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name}: must be an integer >= ${min}, got ${JSON.stringify(env[name])}`);
  }
  return value;
}

function pairs(text, name) {
  const out = {};
  for (const item of (text || '').split(',')) {
    const pair = item.trim();
    if (!pair) continue;
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`${name}: expected k=v pairs, got ${JSON.stringify(pair)}`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

export function parseLabels(text) {
  return pairs(text, 'LOAD_LABELS');
}

// What every scenario reads.
function readCommon(env) {
  const executor = env.LOAD_EXECUTOR || 'constant-arrival-rate';
  if (EXECUTORS.indexOf(executor) < 0) {
    throw new Error(`LOAD_EXECUTOR: must be one of ${EXECUTORS.join(', ')}, got ${JSON.stringify(executor)}`);
  }
  return {
    target: (env.LOAD_TARGET || 'http://127.0.0.1:4318').replace(/\/+$/, ''),
    executor,
    vus: int(env, 'LOAD_VUS', 10, 1),
    maxVus: int(env, 'LOAD_MAX_VUS', 0, 0),
    // VUs an arrival-rate executor starts with (loadgate's RunSpec.preallocated_vus); 0: vus.
    preAllocatedVus: int(env, 'LOAD_PREALLOCATED_VUS', 0, 0),
    rate: int(env, 'LOAD_RATE', 60000, 1),
    duration: env.LOAD_DURATION || '60s',
    requestsPerIteration: int(env, 'LOAD_REQUESTS_PER_ITERATION', 1, 1),
    p99Ms: num(env, 'LOAD_P99_MS', 100),
    maxErrorRate: num(env, 'LOAD_MAX_ERROR_RATE', 0.01),
    minLogsPerMinute: num(env, 'LOAD_MIN_LOGS_PER_MINUTE', 0),
    runId: env.LOAD_RUN_ID || 'adhoc',
    instance: env.LOAD_INSTANCE || 'k6',
    labels: parseLabels(env.LOAD_LABELS),
    summaryPath: env.LOAD_SUMMARY || 'summary.json',
    serviceName: env.LOAD_SERVICE_NAME || 'loadgate-k6',
    // Duration histogram counters, for combining several k6 instances' p99 (see histogram.js).
    histogram: env.LOAD_HISTOGRAM === '1',
    // name=address pairs k6 resolves itself (its `hosts` option): a TLS target on loopback is
    // then verified for the name its certificate holds.
    hosts: pairs(env.LOAD_HOSTS, 'LOAD_HOSTS'),
  };
}

function bodies(env, cfg) {
  cfg.bodyMin = int(env, 'LOAD_BODY_MIN', 256, 1);
  cfg.bodyMax = int(env, 'LOAD_BODY_MAX', 2048, 1);
  if (cfg.bodyMin > cfg.bodyMax) {
    throw new Error(`LOAD_BODY_MIN (${cfg.bodyMin}) must not exceed LOAD_BODY_MAX (${cfg.bodyMax})`);
  }
}

// The arrival rate: the rate counts units; each iteration sends requestsPerIteration
// requests of unitsPerRequest units.
function finish(cfg, scenario, unitsPerRequest) {
  cfg.scenario = scenario;
  cfg.unitsPerRequest = unitsPerRequest;
  const unitsPerIteration = unitsPerRequest * cfg.requestsPerIteration;
  cfg.iterationsPerMinute = Math.max(1, Math.round(cfg.rate / unitsPerIteration));
  if (!cfg.maxVus) cfg.maxVus = Math.max(cfg.vus * 10, Math.ceil(cfg.iterationsPerMinute / 60), cfg.vus);
  return cfg;
}

// otlp-logs
export function readConfig(env) {
  const cfg = readCommon(env);
  cfg.logsPerRequest = int(env, 'LOAD_LOGS_PER_REQUEST', 5, 1);
  cfg.streams = int(env, 'LOAD_STREAMS', 4, 1);
  bodies(env, cfg);
  cfg.perRequest = { logs_per_request: cfg.logsPerRequest };
  return finish(cfg, OTLP_LOGS, cfg.logsPerRequest);
}

// otlp-metrics
export function readMetricsConfig(env) {
  const cfg = readCommon(env);
  cfg.seriesPerRequest = int(env, 'LOAD_SERIES_PER_REQUEST', 10, 1);
  cfg.pointsPerSeries = int(env, 'LOAD_POINTS_PER_SERIES', 5, 1);
  cfg.histogramBuckets = int(env, 'LOAD_HISTOGRAM_BUCKETS', 8, 1);
  cfg.perRequest = { series_per_request: cfg.seriesPerRequest, points_per_series: cfg.pointsPerSeries };
  return finish(cfg, OTLP_METRICS, cfg.seriesPerRequest * cfg.pointsPerSeries);
}

// The shape of Loki push requests (loki-push, and logql-query's pushes).
function pushShape(env, cfg) {
  cfg.streamsPerRequest = int(env, 'LOAD_STREAMS_PER_REQUEST', 10, 1);
  cfg.linesPerStream = int(env, 'LOAD_LINES_PER_STREAM', 10, 1);
  cfg.lokiStreams = int(env, 'LOAD_LOKI_STREAMS', 100, 1);
  if (cfg.streamsPerRequest > cfg.lokiStreams) {
    throw new Error(`LOAD_STREAMS_PER_REQUEST (${cfg.streamsPerRequest}) must not exceed LOAD_LOKI_STREAMS (${cfg.lokiStreams})`);
  }
  bodies(env, cfg);
}

// loki-push
export function readPushConfig(env) {
  const cfg = readCommon(env);
  pushShape(env, cfg);
  cfg.perRequest = { streams_per_request: cfg.streamsPerRequest, lines_per_stream: cfg.linesPerStream };
  return finish(cfg, LOKI_PUSH, cfg.streamsPerRequest * cfg.linesPerStream);
}

// otlp-traces
export function readTracesConfig(env) {
  const cfg = readCommon(env);
  cfg.tracesPerRequest = int(env, 'LOAD_TRACES_PER_REQUEST', 5, 1);
  cfg.spansPerTrace = int(env, 'LOAD_SPANS_PER_TRACE', 9, 1);
  cfg.spanAttributes = int(env, 'LOAD_SPAN_ATTRIBUTES', 20, 0);
  cfg.attributeSize = int(env, 'LOAD_ATTRIBUTE_SIZE', 32, 1);
  cfg.perRequest = { traces_per_request: cfg.tracesPerRequest, spans_per_trace: cfg.spansPerTrace };
  return finish(cfg, OTLP_TRACES, cfg.tracesPerRequest * cfg.spansPerTrace);
}

// logql-query: its unit is queries (one a request); beside them it pushes lines at pushRate
// per minute, in requests of the loki-push shape, on a k6 scenario of their own.
export function readQueryConfig(env) {
  const cfg = readCommon(env);
  pushShape(env, cfg);
  cfg.pushRate = int(env, 'LOAD_PUSH_RATE', 6000, 1);
  cfg.queryWindowS = int(env, 'LOAD_QUERY_WINDOW', 60, 1);
  cfg.linesPerPush = cfg.streamsPerRequest * cfg.linesPerStream;
  if (cfg.pushRate < cfg.linesPerPush) {
    throw new Error(`LOAD_PUSH_RATE (${cfg.pushRate}) must be at least one push request (${cfg.linesPerPush} lines) per minute`);
  }
  cfg.pushesPerMinute = Math.max(1, Math.round(cfg.pushRate / cfg.linesPerPush));
  cfg.pushMaxVus = Math.min(10000, Math.max(cfg.vus * 10, Math.ceil(cfg.pushesPerMinute / 60)));
  cfg.perRequest = { push_rate: cfg.pushRate, query_window: cfg.queryWindowS };
  return finish(cfg, LOGQL_QUERY, 1);
}

export function scenarioFor(cfg) {
  const common = { exec: cfg.scenario.exec, gracefulStop: '5s' };
  if (cfg.executor === 'constant-vus') {
    return Object.assign({ executor: 'constant-vus', vus: cfg.vus, duration: cfg.duration }, common);
  }
  if (cfg.executor === 'constant-arrival-rate') {
    return Object.assign({
      executor: 'constant-arrival-rate',
      rate: cfg.iterationsPerMinute,
      timeUnit: '1m',
      duration: cfg.duration,
      preAllocatedVUs: cfg.preAllocatedVus || cfg.vus,
      maxVUs: cfg.maxVus,
    }, common);
  }
  // ramping-arrival-rate: from zero up to the target rate over the whole duration.
  return Object.assign({
    executor: 'ramping-arrival-rate',
    startRate: 0,
    timeUnit: '1m',
    stages: [{ target: cfg.iterationsPerMinute, duration: cfg.duration }],
    preAllocatedVUs: cfg.preAllocatedVus || cfg.vus,
    maxVUs: cfg.maxVus,
  }, common);
}

// The durations of the requests k6 counted as accepted (2xx: send.js sets which statuses are
// expected): a refused request is a failure in `errors`, never a latency in the p99.
export const OK_DURATION = 'http_req_duration{expected_response:true}';

// The metric the p99 gate and the summary's latencies are of (logql-query: its answered queries).
export function durationMetricOf(cfg) {
  return cfg.scenario.duration || OK_DURATION;
}

export function thresholdsFor(cfg) {
  const t = {
    errors: [`rate<=${cfg.maxErrorRate}`],
    [durationMetricOf(cfg)]: [`p(99)<${cfg.p99Ms}`],
  };
  if (cfg.minLogsPerMinute > 0) {
    // k6 counter rates are per second.
    t[cfg.scenario.accepted] = [`rate>=${cfg.minLogsPerMinute / 60}`];
  }
  if (cfg.scenario.wrong) t[cfg.scenario.wrong] = ['count<1'];
  return t;
}

// The k6 scenario of a scenario's pushes beside its queries (logql-query): at pushRate lines per
// minute whatever the queries' executor.
function pushScenarioFor(cfg) {
  return {
    executor: 'constant-arrival-rate',
    exec: cfg.scenario.push.exec,
    rate: cfg.pushesPerMinute,
    timeUnit: '1m',
    duration: cfg.duration,
    preAllocatedVUs: cfg.vus,
    maxVUs: cfg.pushMaxVus,
    gracefulStop: '5s',
  };
}

export function optionsFor(cfg) {
  const scenarios = { [cfg.scenario.key]: scenarioFor(cfg) };
  if (cfg.scenario.push) scenarios[cfg.scenario.push.key] = pushScenarioFor(cfg);
  const options = {
    scenarios,
    thresholds: thresholdsFor(cfg),
    discardResponseBodies: true,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
    tags: Object.assign({}, cfg.labels, { run_id: cfg.runId, scenario: cfg.scenario.name, instance: cfg.instance }),
  };
  if (Object.keys(cfg.hosts).length) options.hosts = cfg.hosts;
  return options;
}
