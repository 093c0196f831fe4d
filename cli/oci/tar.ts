/**
 * A deterministic tar writer (POSIX ustar, with pax records for long names) and a small
 * reader. The same entries always give the same bytes: entries are written in the order given,
 * owners, times and modes come from the entries (never from the file system), and no field
 * depends on the machine. That is what makes image layers reproducible.
 *
 * @module
 */

import { Buffer } from "node:buffer";

/** One entry of a tar archive. */
export type TarEntry =
  | { type: "file"; path: string; data: Uint8Array; mode?: number; uid?: number; gid?: number }
  | { type: "directory"; path: string; mode?: number; uid?: number; gid?: number }
  | { type: "symlink"; path: string; target: string; uid?: number; gid?: number };

/** Options that apply to every entry of an archive. */
export interface TarOptions {
  /** Modification time of every entry, in seconds since the epoch; default 0. */
  mtime?: number;
}

const BLOCK = 512;
const encoder = new TextEncoder();

/** Writes `value` as a NUL-terminated octal number of `length` bytes at `offset`. */
function octal(header: Uint8Array, offset: number, length: number, value: number): void {
  const digits = value.toString(8).padStart(length - 1, "0");
  if (digits.length > length - 1) throw new Error(`tar: ${value} does not fit ${length} bytes`);
  header.set(encoder.encode(digits), offset);
  header[offset + length - 1] = 0;
}

/** Writes `text` at `offset`; throws when it is longer than `length` bytes. */
function field(header: Uint8Array, offset: number, length: number, text: string): void {
  const bytes = encoder.encode(text);
  if (bytes.length > length) throw new Error(`tar: "${text}" is longer than ${length} bytes`);
  header.set(bytes, offset);
}

/** The bytes that pad `size` to a whole number of blocks. */
function padding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

/** One pax record, `"<length> <key>=<value>\n"`, where length counts the whole record. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLength = encoder.encode(body).length;
  let length = bodyLength + String(bodyLength).length;
  if (String(length).length + bodyLength !== length) length += 1;
  return `${length}${body}`;
}

interface Header {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  typeflag: string;
  linkname: string;
}

function headerBlock(h: Header): Uint8Array {
  const block = new Uint8Array(BLOCK);
  field(block, 0, 100, h.name);
  octal(block, 100, 8, h.mode);
  octal(block, 108, 8, h.uid);
  octal(block, 116, 8, h.gid);
  octal(block, 124, 12, h.size);
  octal(block, 136, 12, h.mtime);
  block.fill(0x20, 148, 156); // the checksum is computed with its own field as spaces
  field(block, 156, 1, h.typeflag);
  field(block, 157, 100, h.linkname);
  field(block, 257, 6, "ustar");
  field(block, 263, 2, "00");
  // uname/gname stay empty: numeric ids only, the same on every machine.
  let sum = 0;
  for (const byte of block) sum += byte;
  octal(block, 148, 7, sum);
  block[155] = 0x20;
  return block;
}

const TYPEFLAG = { file: "0", symlink: "2", directory: "5" } as const;

/** The blocks of one entry: a pax header when a name does not fit, the header, the data. */
function* entryChunks(entry: TarEntry, mtime: number): Generator<Uint8Array> {
  const path = entry.type === "directory" && !entry.path.endsWith("/")
    ? `${entry.path}/`
    : entry.path;
  const linkname = entry.type === "symlink" ? entry.target : "";
  const data = entry.type === "file" ? entry.data : new Uint8Array(0);
  const records: string[] = [];
  const nameFits = encoder.encode(path).length <= 100;
  if (!nameFits) records.push(paxRecord("path", path));
  if (encoder.encode(linkname).length > 100) records.push(paxRecord("linkpath", linkname));
  const uid = entry.uid ?? 0;
  const gid = entry.gid ?? 0;
  if (records.length > 0) {
    const pax = encoder.encode(records.join(""));
    yield headerBlock({
      name: "PaxHeaders/" + path.replace(/\/$/, "").split("/").pop()!.slice(0, 80),
      mode: 0o644,
      uid,
      gid,
      size: pax.length,
      mtime,
      typeflag: "x",
      linkname: "",
    });
    yield pax;
    yield padding(pax.length);
  }
  const defaultMode = entry.type === "directory" ? 0o755 : entry.type === "symlink" ? 0o777 : 0o644;
  yield headerBlock({
    name: nameFits ? path : path.slice(0, 100 - 1).replace(/[\u0080-\uffff]/g, "_"),
    mode: ("mode" in entry ? entry.mode : undefined) ?? defaultMode,
    uid,
    gid,
    size: data.length,
    mtime,
    typeflag: TYPEFLAG[entry.type],
    linkname: encoder.encode(linkname).length > 100 ? "" : linkname,
  });
  if (data.length > 0) {
    yield data;
    yield padding(data.length);
  }
}

/** The archive as a sequence of chunks, ending with the two zero blocks of the end marker. */
export function* tarChunks(
  entries: Iterable<TarEntry>,
  options: TarOptions = {},
): Generator<Uint8Array> {
  const mtime = options.mtime ?? 0;
  for (const entry of entries) yield* entryChunks(entry, mtime);
  yield new Uint8Array(BLOCK * 2);
}

/** The archive in one buffer. */
export function tar(entries: Iterable<TarEntry>, options: TarOptions = {}): Uint8Array {
  return Buffer.concat([...tarChunks(entries, options)]);
}

/** An entry as {@linkcode readTar} returns it. */
export interface TarRecord {
  /** The path in the archive (directories end with `/`). */
  path: string;
  /** What the entry is. */
  type: "file" | "directory" | "symlink" | "hardlink" | "other";
  /** Permission bits. */
  mode: number;
  /** Owner's user id. */
  uid: number;
  /** Owner's group id. */
  gid: number;
  /** Modification time, in seconds since the epoch. */
  mtime: number;
  /** The target of a link. */
  linkname: string;
  /** A file's content (empty for others). */
  data: Uint8Array;
}

const decoder = new TextDecoder();

function readString(block: Uint8Array, offset: number, length: number): string {
  const bytes = block.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

function readOctal(block: Uint8Array, offset: number, length: number): number {
  const text = readString(block, offset, length).trim();
  return text === "" ? 0 : parseInt(text, 8);
}

/** Parses pax records into key/value pairs. */
function parsePax(data: Uint8Array): Record<string, string> {
  const records: Record<string, string> = {};
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    if (space === -1) break;
    const length = Number(decoder.decode(data.subarray(offset, space)));
    if (!Number.isInteger(length) || length <= 0) throw new Error("tar: malformed pax record");
    const record = decoder.decode(data.subarray(space + 1, offset + length - 1));
    const equals = record.indexOf("=");
    records[record.slice(0, equals)] = record.slice(equals + 1);
    offset += length;
  }
  return records;
}

/**
 * Reads a tar archive (ustar, GNU or pax). Verifies each header's checksum. Meant for archives
 * that fit in memory: image layers in tests, the layers of a base image.
 */
export function readTar(archive: Uint8Array): TarRecord[] {
  const records: TarRecord[] = [];
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  let longLink: string | undefined;
  for (let offset = 0; offset + BLOCK <= archive.length;) {
    const block = archive.subarray(offset, offset + BLOCK);
    if (block.every((byte) => byte === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
    if (sum !== readOctal(block, 148, 8)) {
      throw new Error(`tar: bad header checksum at offset ${offset}`);
    }
    const size = readOctal(block, 124, 12);
    const typeflag = String.fromCharCode(block[156] || 0x30);
    const data = archive.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + size + padding(size).length;
    if (typeflag === "x") {
      pax = { ...pax, ...parsePax(data) };
      continue;
    }
    if (typeflag === "g") continue;
    if (typeflag === "L" || typeflag === "K") {
      const text = readString(data, 0, data.length);
      if (typeflag === "L") longName = text;
      else longLink = text;
      continue;
    }
    const prefix = readString(block, 345, 155);
    const name = readString(block, 0, 100);
    const path = pax.path ?? longName ?? (prefix ? `${prefix}/${name}` : name);
    const types: Record<string, TarRecord["type"]> = {
      "0": "file",
      "7": "file",
      "1": "hardlink",
      "2": "symlink",
      "5": "directory",
    };
    records.push({
      path,
      type: types[typeflag] ?? "other",
      mode: readOctal(block, 100, 8),
      uid: readOctal(block, 108, 8),
      gid: readOctal(block, 116, 8),
      mtime: readOctal(block, 136, 12),
      linkname: pax.linkpath ?? longLink ?? readString(block, 157, 100),
      data,
    });
    pax = {};
    longName = undefined;
    longLink = undefined;
  }
  return records;
}
