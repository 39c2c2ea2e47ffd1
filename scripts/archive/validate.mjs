// validate.mjs checks a .warc.gz with warcio.js, a WARC reader not written
// for herod. Usage: node validate.mjs FILE.warc.gz
//
// For every record it checks, using warcio's parser: the WARC version, that
// Content-Length matches the block, WARC-Block-Digest over the raw block and,
// for responses, WARC-Payload-Digest over the HTTP payload; revisit records
// must name their profile and target and carry a payload digest equal to an
// earlier response of the same URI in the file when that response is there.
// A warcinfo record is allowed first only, with application/warc-fields.
// A metadata record (outlinks) must be application/warc-fields and name an
// earlier record in WARC-Concurrent-To. A request record must be
// application/http;msgtype=request, parse as an HTTP request, and be
// followed by the response record its WARC-Concurrent-To names, of the same
// target and date.
// It prints a JSON summary and exits 1 if any check failed.
import { WARCParser } from "warcio";
import crypto from "node:crypto";
import fs from "node:fs";

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(buf) {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}

const sha1 = (bytes) => "sha1:" + base32(crypto.createHash("sha1").update(bytes).digest());

async function records(file, parseHttp) {
  const out = [];
  const parser = new WARCParser(fs.createReadStream(file), { parseHttp });
  for await (const rec of parser) {
    const content = await rec.readFully(false);
    out.push({ rec, content });
  }
  return out;
}

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate.mjs FILE.warc.gz");
  process.exit(2);
}

const errors = [];
const summary = { records: 0, responses: 0, revisits: 0, uris: [], statuses: {}, errors };

const raw = await records(file, false);
for (const [i, { rec, content }] of raw.entries()) {
  const where = `record ${i} (${rec.warcTargetURI})`;
  if (rec.warcHeaders.protocol !== "WARC/1.1") errors.push(`${where}: version ${rec.warcHeaders.protocol}`);
  if (Number(rec.warcHeader("Content-Length")) !== content.length) {
    errors.push(`${where}: Content-Length ${rec.warcHeader("Content-Length")}, block ${content.length}`);
  }
  if (sha1(content) !== rec.warcHeader("WARC-Block-Digest")) errors.push(`${where}: block digest mismatch`);
  const info = rec.warcType === "warcinfo";
  if (info && i !== 0) errors.push(`${where}: warcinfo record not first`);
  if (info && rec.warcHeader("Content-Type") !== "application/warc-fields") errors.push(`${where}: warcinfo not application/warc-fields`);
  const meta = rec.warcType === "metadata";
  const request = rec.warcType === "request";
  if (request && rec.warcHeader("Content-Type") !== "application/http;msgtype=request") errors.push(`${where}: request not application/http;msgtype=request`);
  if (meta && rec.warcHeader("Content-Type") !== "application/warc-fields") errors.push(`${where}: metadata not application/warc-fields`);
  const required = info ? ["WARC-Record-ID", "WARC-Date"] : meta || request ? ["WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Concurrent-To"] : ["WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Payload-Digest"];
  for (const f of required) {
    if (!rec.warcHeader(f)) errors.push(`${where}: no ${f}`);
  }
}

const parsed = await records(file, true);
const seen = new Map(); // uri -> set of payload digests of responses so far
const ids = new Set(); // record ids so far
for (const [i, { rec, content }] of parsed.entries()) {
  const uri = rec.warcTargetURI;
  const where = `record ${i} (${uri})`;
  summary.records++;
  if (!summary.uris.includes(uri)) summary.uris.push(uri);
  const status = rec.httpHeaders?.statusCode;
  summary.statuses[status] = (summary.statuses[status] || 0) + 1;
  const digest = rec.warcHeader("WARC-Payload-Digest");
  if (rec.warcType === "response") {
    summary.responses++;
    if (sha1(content) !== digest) errors.push(`${where}: payload digest mismatch`);
    if (!seen.has(uri)) seen.set(uri, new Set());
    seen.get(uri).add(digest);
  } else if (rec.warcType === "revisit") {
    summary.revisits++;
    const profile = rec.warcHeader("WARC-Profile") || "";
    if (profile.endsWith("/revisit/server-not-modified")) {
      summary.notModified = (summary.notModified || 0) + 1;
      if (status !== 304) errors.push(`${where}: server-not-modified revisit whose HTTP head is not a 304`);
    } else if (!profile.endsWith("/revisit/identical-payload-digest")) {
      errors.push(`${where}: revisit without an identical-payload-digest or server-not-modified profile`);
    }
    if (rec.warcHeader("WARC-Refers-To-Target-URI") !== uri || !rec.warcHeader("WARC-Refers-To-Date")) {
      errors.push(`${where}: revisit does not name its target`);
    }
    if (seen.has(uri) && !seen.get(uri).has(digest)) errors.push(`${where}: revisit digest matches no earlier response`);
  } else if (rec.warcType === "metadata") {
    summary.metadata = (summary.metadata || 0) + 1;
    if (!ids.has(rec.warcHeader("WARC-Concurrent-To"))) errors.push(`${where}: metadata concurrent to no earlier record`);
  } else if (rec.warcType === "request") {
    summary.requests = (summary.requests || 0) + 1;
    const next = parsed[i + 1]?.rec;
    if (!rec.httpHeaders?.method) errors.push(`${where}: request block is not an HTTP request`);
    if (!next || next.warcType !== "response" || next.warcHeader("WARC-Record-ID") !== rec.warcHeader("WARC-Concurrent-To") ||
      next.warcTargetURI !== uri || next.warcHeader("WARC-Date") !== rec.warcHeader("WARC-Date")) {
      errors.push(`${where}: request not followed by the response it is concurrent to`);
    }
  } else if (rec.warcType !== "warcinfo") {
    errors.push(`${where}: unexpected record type ${rec.warcType}`);
  }
  ids.add(rec.warcHeader("WARC-Record-ID"));
}
if (raw.length !== parsed.length) errors.push(`record counts differ: ${raw.length} raw, ${parsed.length} parsed`);

console.log(JSON.stringify(summary));
process.exit(errors.length ? 1 : 0);
