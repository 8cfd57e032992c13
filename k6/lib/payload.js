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

// How far apart the pool's bodies may start in one shared lorem text.
const SPREAD = 4096;

// A pool of bodies whose lengths are spread uniformly over [min, max]: slices of one lorem text
// at random offsets (one text per VU, so hundreds of VUs start in a blink: building every body
// word by word took 90 ms a VU).
export function buildBodyPool(size, min, max, random) {
  const text = loremOfLength(max + SPREAD, random);
  const pool = new Array(size);
  for (let i = 0; i < size; i++) {
    const length = min + Math.floor(random() * (max - min + 1));
    const start = Math.floor(random() * (SPREAD + 1));
    pool[i] = text.slice(start, start + length);
  }
  return pool;
}

function attr(key, value) {
  return `{"key":${JSON.stringify(key)},"value":{"stringValue":${JSON.stringify(String(value))}}}`;
}

const RECORD_PIECES = 7;
// String.prototype.concat sizes its result once; Array.prototype.join grows it piece by piece.
const CONCAT = String.prototype.concat;

// Everything of a request that does not change between iterations of one VU, laid out as the
// pieces of one request body. Fixed pieces are set once; an iteration only fills in the
// timestamps, the iteration number and a ready-made tail (body text and record end) per record,
// then concatenates the pieces once.
export function requestParts(cfg, vu, texts) {
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
  const recordEnd = `"},"attributes":[{"key":"vu","value":{"intValue":"${vu}"}},${attr('stream_id', stream)}]}`;
  // Every body starts with this marker: LogQL counts a run's records by it, and with the
  // record index and iteration number it makes every line unique, so Loki never deduplicates.
  const marker = `run=${cfg.runId} i=${cfg.instance} vu=${vu}`;
  // Nanosecond suffixes keep timestamps of one VU's records distinct within a millisecond.
  const slot = vu % 1000;
  const n = cfg.logsPerRequest;
  const pieces = [head];
  for (let k = 0; k < n; k++) {
    const nanos = String(slot * 1000 + k).padStart(6, '0');
    pieces.push(
      (k === 0 ? '' : ',') + '{"timeUnixNano":"',
      '', // milliseconds
      nanos + '","observedTimeUnixNano":"',
      '', // milliseconds
      nanos + '","severityNumber":9,"severityText":"INFO","body":{"stringValue":"' + marker + ` n=${k} it=`,
      '', // iteration
      '', // tail: " <text>" and the record's end
    );
  }
  pieces.push(']}]}]}');
  const tails = texts.map((text) => ' ' + text + recordEnd);
  return { pieces, n, tails, next: Math.floor(Math.random() * tails.length) };
}

// One request body of `parts.n` log records. Reuses the VU's pieces array; tails are taken in
// turn from a random start, so body lengths stay uniform over the pool.
export function buildRequest(parts, iteration, nowMs) {
  const ms = String(nowMs);
  const it = String(iteration);
  const pieces = parts.pieces;
  const tails = parts.tails;
  let next = parts.next;
  for (let k = 0, base = 1; k < parts.n; k++, base += RECORD_PIECES) {
    pieces[base + 1] = ms;
    pieces[base + 3] = ms;
    pieces[base + 5] = it;
    pieces[base + 6] = tails[next];
    next = next + 1 === tails.length ? 0 : next + 1;
  }
  parts.next = next;
  return CONCAT.apply('', pieces);
}
