// The scenarios as k6 sees them: the name, the key of its k6 scenario, the function it runs,
// its counters and its unit. The same names as loadgate's registry
// (src/loadgate/contract/scenarios.py); tests/local/test_k6_scenarios.py checks they agree.

export const OTLP_LOGS = {
  name: 'otlp-logs', key: 'logs', exec: 'sendLogs',
  sent: 'log_records_sent', accepted: 'log_records_accepted', unit: 'log records',
};

export const OTLP_METRICS = {
  name: 'otlp-metrics', key: 'metrics', exec: 'sendMetrics',
  sent: 'data_points_sent', accepted: 'data_points_accepted', unit: 'data points',
};

export const LOKI_PUSH = {
  name: 'loki-push', key: 'push', exec: 'pushLines',
  sent: 'lines_sent', accepted: 'lines_accepted', unit: 'lines',
};

export const OTLP_TRACES = {
  name: 'otlp-traces', key: 'traces', exec: 'sendTraces',
  sent: 'spans_sent', accepted: 'spans_accepted', unit: 'spans',
};

// Two k6 scenarios: `query` (its unit, at the run's rate and executor) and `push` (the lines
// it queries, at push-rate). Its ledger counts the pushed lines; `wrong` counts the answers
// that did not match what the query's VU had pushed by then.
export const LOGQL_QUERY = {
  name: 'logql-query', key: 'query', exec: 'queryLines',
  sent: 'queries_sent', accepted: 'queries_accepted', unit: 'queries',
  duration: 'query_duration', wrong: 'wrong_answers',
  push: { key: 'push', exec: 'pushLines', sent: 'lines_sent', accepted: 'lines_accepted', unit: 'lines' },
};
