// Run parameters from environment variables (LOAD_*), and the k6 options they imply.
// Every parameter has the same name, default and unit as loadgate's RunSpec and the k6 charm's
// start-load action; loadgate validates them before k6 starts, these checks guard direct use.

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

export function parseLabels(text) {
  const labels = {};
  for (const item of (text || '').split(',')) {
    const pair = item.trim();
    if (!pair) continue;
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`LOAD_LABELS: expected k=v pairs, got ${JSON.stringify(pair)}`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

export function readConfig(env) {
  const executor = env.LOAD_EXECUTOR || 'constant-arrival-rate';
  if (EXECUTORS.indexOf(executor) < 0) {
    throw new Error(`LOAD_EXECUTOR: must be one of ${EXECUTORS.join(', ')}, got ${JSON.stringify(executor)}`);
  }
  const cfg = {
    target: (env.LOAD_TARGET || 'http://127.0.0.1:4318').replace(/\/+$/, ''),
    executor,
    vus: int(env, 'LOAD_VUS', 10, 1),
    maxVus: int(env, 'LOAD_MAX_VUS', 0, 0),
    rate: int(env, 'LOAD_RATE', 60000, 1),
    duration: env.LOAD_DURATION || '60s',
    logsPerRequest: int(env, 'LOAD_LOGS_PER_REQUEST', 5, 1),
    requestsPerIteration: int(env, 'LOAD_REQUESTS_PER_ITERATION', 1, 1),
    bodyMin: int(env, 'LOAD_BODY_MIN', 256, 1),
    bodyMax: int(env, 'LOAD_BODY_MAX', 2048, 1),
    p99Ms: num(env, 'LOAD_P99_MS', 100),
    maxErrorRate: num(env, 'LOAD_MAX_ERROR_RATE', 0.01),
    minLogsPerMinute: num(env, 'LOAD_MIN_LOGS_PER_MINUTE', 0),
    runId: env.LOAD_RUN_ID || 'adhoc',
    instance: env.LOAD_INSTANCE || 'k6',
    streams: int(env, 'LOAD_STREAMS', 4, 1),
    labels: parseLabels(env.LOAD_LABELS),
    summaryPath: env.LOAD_SUMMARY || 'summary.json',
    serviceName: env.LOAD_SERVICE_NAME || 'loadgate-k6',
    // Duration histogram counters, for combining several k6 instances' p99 (see histogram.js).
    histogram: env.LOAD_HISTOGRAM === '1',
  };
  if (cfg.bodyMin > cfg.bodyMax) {
    throw new Error(`LOAD_BODY_MIN (${cfg.bodyMin}) must not exceed LOAD_BODY_MAX (${cfg.bodyMax})`);
  }
  // Arrival rates count iterations; each iteration sends requestsPerIteration requests.
  const recordsPerIteration = cfg.logsPerRequest * cfg.requestsPerIteration;
  cfg.iterationsPerMinute = Math.max(1, Math.round(cfg.rate / recordsPerIteration));
  if (!cfg.maxVus) cfg.maxVus = Math.max(cfg.vus * 10, Math.ceil(cfg.iterationsPerMinute / 60), cfg.vus);
  return cfg;
}

export function scenarioFor(cfg) {
  const common = { exec: 'sendLogs', gracefulStop: '5s' };
  if (cfg.executor === 'constant-vus') {
    return Object.assign({ executor: 'constant-vus', vus: cfg.vus, duration: cfg.duration }, common);
  }
  if (cfg.executor === 'constant-arrival-rate') {
    return Object.assign({
      executor: 'constant-arrival-rate',
      rate: cfg.iterationsPerMinute,
      timeUnit: '1m',
      duration: cfg.duration,
      preAllocatedVUs: cfg.vus,
      maxVUs: cfg.maxVus,
    }, common);
  }
  // ramping-arrival-rate: from zero up to the target rate over the whole duration.
  return Object.assign({
    executor: 'ramping-arrival-rate',
    startRate: 0,
    timeUnit: '1m',
    stages: [{ target: cfg.iterationsPerMinute, duration: cfg.duration }],
    preAllocatedVUs: cfg.vus,
    maxVUs: cfg.maxVus,
  }, common);
}

export function thresholdsFor(cfg) {
  const t = {
    errors: [`rate<=${cfg.maxErrorRate}`],
    http_req_duration: [`p(99)<${cfg.p99Ms}`],
  };
  if (cfg.minLogsPerMinute > 0) {
    // k6 counter rates are per second.
    t.log_records_accepted = [`rate>=${cfg.minLogsPerMinute / 60}`];
  }
  return t;
}

export function optionsFor(cfg) {
  return {
    scenarios: { logs: scenarioFor(cfg) },
    thresholds: thresholdsFor(cfg),
    discardResponseBodies: true,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
    tags: Object.assign({}, cfg.labels, { run_id: cfg.runId, scenario: 'otlp-logs', instance: cfg.instance }),
  };
}
