// OTLP/HTTP JSON log payloads, assembled from strings prepared once per VU in the init context,
// so an iteration costs little more than the request itself.

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut ' +
  'labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris ' +
  'nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse ' +
  'cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui ' +
  'officia deserunt mollit anim id est laborum'
).split(' ');

// Lorem text of exactly `length` characters: plain ASCII letters and spaces, safe inside JSON.
export function loremOfLength(length, random) {
  let text = '';
  while (text.length < length) {
    const word = WORDS[Math.floor(random() * WORDS.length)];
    text += text ? ' ' + word : word.charAt(0).toUpperCase() + word.slice(1);
  }
  return text.slice(0, length);
}

// A pool of bodies whose lengths are spread uniformly over [min, max].
export function buildBodyPool(size, min, max, random) {
  const pool = new Array(size);
  for (let i = 0; i < size; i++) {
    const length = min + Math.floor(random() * (max - min + 1));
    pool[i] = loremOfLength(length, random);
  }
  return pool;
}

function attr(key, value) {
  return `{"key":${JSON.stringify(key)},"value":{"stringValue":${JSON.stringify(String(value))}}}`;
}

// Everything of a request that does not change between iterations of one VU.
export function requestParts(cfg, vu) {
  const stream = `s${(vu - 1 + cfg.streams) % cfg.streams}`;
  const resourceAttrs = [
    attr('service.name', cfg.serviceName),
    attr('service.instance.id', `${cfg.instance}-${stream}`),
    attr('loadtest.run_id', cfg.runId),
  ];
  for (const key of Object.keys(cfg.labels)) resourceAttrs.push(attr(`loadtest.label.${key}`, cfg.labels[key]));
  const head =
    `{"resourceLogs":[{"resource":{"attributes":[${resourceAttrs.join(',')}]},` +
    `"scopeLogs":[{"scope":{"name":"loadgate.k6"},"logRecords":[`;
  const recordAttrs = `[{"key":"vu","value":{"intValue":"${vu}"}},${attr('stream_id', stream)}]`;
  // Nanosecond suffixes keep timestamps of one VU's records distinct within a millisecond.
  const slot = vu % 1000;
  const nanos = [];
  for (let k = 0; k < cfg.logsPerRequest; k++) nanos.push(String(slot * 1000 + k).padStart(6, '0'));
  return {
    head,
    tail: ']}]}]}',
    recordAttrs,
    nanos,
    // Every body starts with this marker: LogQL counts a run's records by it, and it makes
    // every line unique so that Loki never deduplicates two records.
    prefix: `run=${cfg.runId} i=${cfg.instance} vu=${vu} it=`,
  };
}

// One request body holding `parts.nanos.length` log records.
export function buildRequest(parts, pool, iteration, nowMs, random) {
  const ms = String(nowMs);
  const n = parts.nanos.length;
  let body = parts.head;
  for (let k = 0; k < n; k++) {
    const ts = ms + parts.nanos[k];
    const text = pool[Math.floor(random() * pool.length)];
    body +=
      (k === 0 ? '{"timeUnixNano":"' : ',{"timeUnixNano":"') + ts +
      '","observedTimeUnixNano":"' + ts +
      '","severityNumber":9,"severityText":"INFO","body":{"stringValue":"' +
      parts.prefix + iteration + ' n=' + k + ' ' + text +
      '"},"attributes":' + parts.recordAttrs + '}';
  }
  return body + parts.tail;
}
