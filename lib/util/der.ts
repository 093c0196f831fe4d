/**
 * The little of ASN.1 DER that X.509 certificates need: a writer for the types a certificate is
 * made of, and a reader that walks one back (its names, validity and extensions). Enough for
 * `certs.ts` to make CA, serving and client certificates with WebCrypto alone.
 *
 * @module
 */

import { concat } from "./bytes.ts";

/** DER tags used here. */
export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

/** A tag-length-value with `tag` (one byte) around `content`. */
export function tlv(tag: number, content: Uint8Array): Uint8Array {
  const n = content.length;
  let length: number[];
  if (n < 0x80) {
    length = [n];
  } else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
    length = [0x80 | bytes.length, ...bytes];
  }
  return concat([Uint8Array.of(tag, ...length), content]);
}

/** A SEQUENCE of `items`. */
export function sequence(...items: Uint8Array[]): Uint8Array {
  return tlv(TAG.sequence, concat(items));
}

/** A SET of `items`, in the order given (one item per set here, so DER's ordering holds). */
export function set(...items: Uint8Array[]): Uint8Array {
  return tlv(TAG.set, concat(items));
}

/** A non-negative INTEGER from its big-endian bytes (leading zeros dropped, a sign byte added). */
export function integer(bytes: Uint8Array | number): Uint8Array {
  let value = typeof bytes === "number" ? Uint8Array.of(bytes) : bytes;
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  value = value.subarray(start);
  if (value.length === 0) value = Uint8Array.of(0);
  if (value[0] & 0x80) value = concat([Uint8Array.of(0), value]);
  return tlv(TAG.integer, value);
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  if (arcs.length < 2 || arcs.some((arc) => !Number.isInteger(arc) || arc < 0)) {
    throw new TypeError(`not an object identifier: ${dotted}`);
  }
  const bytes: number[] = [];
  for (const arc of [arcs[0] * 40 + arcs[1], ...arcs.slice(2)]) {
    const base128: number[] = [arc & 0x7f];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) {
      base128.unshift(0x80 | (rest & 0x7f));
    }
    bytes.push(...base128);
  }
  return tlv(TAG.oid, Uint8Array.from(bytes));
}

/** A UTF8String. */
export function utf8(text: string): Uint8Array {
  return tlv(TAG.utf8String, new TextEncoder().encode(text));
}

/** A BOOLEAN. */
export function boolean(value: boolean): Uint8Array {
  return tlv(TAG.boolean, Uint8Array.of(value ? 0xff : 0));
}

/** An OCTET STRING. */
export function octetString(bytes: Uint8Array): Uint8Array {
  return tlv(TAG.octetString, bytes);
}

/** A BIT STRING of whole bytes, or of `bytes` less the `unusedBits` at the end of the last one. */
export function bitString(bytes: Uint8Array, unusedBits = 0): Uint8Array {
  return tlv(TAG.bitString, concat([Uint8Array.of(unusedBits), bytes]));
}

/** An explicitly tagged `[n]` around `content` (constructed, context-specific). */
export function explicit(n: number, content: Uint8Array): Uint8Array {
  return tlv(0xa0 | n, content);
}

/** An implicitly tagged primitive `[n]` holding `bytes` (context-specific). */
export function implicit(n: number, bytes: Uint8Array): Uint8Array {
  return tlv(0x80 | n, bytes);
}

/** A certificate's time: UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
export function time(date: Date): Uint8Array {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "");
  const year = date.getUTCFullYear();
  return year < 2050 && year >= 1950
    ? tlv(TAG.utcTime, new TextEncoder().encode(`${digits.slice(2)}Z`))
    : tlv(TAG.generalizedTime, new TextEncoder().encode(`${digits}Z`));
}

/** One element read from DER: its tag, its content and its whole encoding. */
export interface Element {
  tag: number;
  /** The content octets. */
  content: Uint8Array;
  /** The element's whole encoding (tag, length and content). */
  raw: Uint8Array;
}

/** Reads the element at `at` in `bytes`; throws on a truncated or indefinite-length encoding. */
export function read(bytes: Uint8Array, at = 0): Element {
  if (at + 2 > bytes.length) throw new Error("DER: truncated element");
  const tag = bytes[at];
  let length = bytes[at + 1];
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new Error("DER: unsupported length");
    if (at + 2 + count > bytes.length) throw new Error("DER: truncated length");
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[at + 2 + i];
    header += count;
  }
  const end = at + header + length;
  if (end > bytes.length) throw new Error("DER: truncated content");
  return { tag, content: bytes.subarray(at + header, end), raw: bytes.subarray(at, end) };
}

/** The elements inside a constructed element (a SEQUENCE's items). */
export function children(element: Element): Element[] {
  const items: Element[] = [];
  for (let at = 0; at < element.content.length;) {
    const item = read(element.content, at);
    items.push(item);
    at += item.raw.length;
  }
  return items;
}

/** The dotted form of an OBJECT IDENTIFIER element. */
export function readOid(element: Element): string {
  if (element.tag !== TAG.oid) throw new Error("DER: not an object identifier");
  const bytes = element.content;
  const arcs: number[] = [];
  let value = 0;
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  const first = arcs.shift() ?? 0;
  const top = first < 80 ? Math.floor(first / 40) : 2;
  return [top, first - top * 40, ...arcs].join(".");
}

/** The date of a UTCTime or GeneralizedTime element. */
export function readTime(element: Element): Date {
  const text = new TextDecoder().decode(element.content);
  const match = element.tag === TAG.utcTime
    ? text.match(/^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/)
    : text.match(/^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/);
  if (!match) throw new Error(`DER: unsupported time ${text}`);
  let year = Number(match[1]);
  if (element.tag === TAG.utcTime) year += year < 50 ? 2000 : 1900;
  const [month, day, hour, minute, second] = match.slice(2).map(Number);
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second));
}
