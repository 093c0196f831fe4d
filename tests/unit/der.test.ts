// The DER writer and reader of lib/util/der.ts, against encodings fixed by X.690 and RFC 5280.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  bitString,
  boolean,
  children,
  explicit,
  implicit,
  integer,
  oid,
  read,
  readOid,
  readTime,
  sequence,
  TAG,
  time,
  tlv,
  utf8,
} from "../../lib/util/der.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

describe("DER", () => {
  it("writes short, one-byte and two-byte lengths", () => {
    assert.equal(hex(tlv(0x04, new Uint8Array(3))), "0403000000");
    assert.equal(hex(tlv(0x04, new Uint8Array(127))).slice(0, 4), "047f");
    assert.equal(hex(tlv(0x04, new Uint8Array(128))).slice(0, 6), "048180");
    assert.equal(hex(tlv(0x04, new Uint8Array(256))).slice(0, 8), "04820100");
    const long = tlv(0x04, new Uint8Array(300).fill(7));
    const back = read(long);
    assert.equal(back.content.length, 300);
    assert.equal(back.raw.length, long.length);
  });

  it("writes INTEGERs minimal and non-negative", () => {
    assert.equal(hex(integer(0)), "020100");
    assert.equal(hex(integer(2)), "020102");
    assert.equal(hex(integer(0x80)), "02020080"); // a sign byte keeps it positive
    assert.equal(hex(integer(Uint8Array.of(0, 0, 1, 2))), "02020102"); // leading zeros dropped
    assert.equal(hex(integer(Uint8Array.of(0, 0x90))), "02020090");
    assert.equal(hex(integer(new Uint8Array(0))), "020100");
  });

  it("writes and reads OBJECT IDENTIFIERs", () => {
    assert.equal(hex(oid("2.5.4.3")), "0603550403");
    assert.equal(hex(oid("1.2.840.10045.4.3.2")), "06082a8648ce3d040302");
    assert.equal(hex(oid("1.3.6.1.5.5.7.3.1")), "06082b06010505070301");
    for (const dotted of ["2.5.29.37", "1.2.840.10045.2.1", "2.999.3", "1.3.6.1.4.1.311.21.7"]) {
      assert.equal(readOid(read(oid(dotted))), dotted);
    }
    assert.throws(() => oid("1"), /not an object identifier/);
    assert.throws(() => oid("1.x.3"), /not an object identifier/);
    assert.throws(() => readOid(read(utf8("x"))), /not an object identifier/);
  });

  it("writes UTCTime through 2049 and GeneralizedTime after, and reads both back", () => {
    const in2026 = new Date(Date.UTC(2026, 11, 1, 18, 5, 9));
    assert.equal(new TextDecoder().decode(read(time(in2026)).content), "261201180509Z");
    assert.equal(read(time(in2026)).tag, TAG.utcTime);
    const in2051 = new Date(Date.UTC(2051, 0, 2, 3, 4, 5));
    assert.equal(new TextDecoder().decode(read(time(in2051)).content), "20510102030405Z");
    assert.equal(read(time(in2051)).tag, TAG.generalizedTime);
    assert.equal(readTime(read(time(in2026))).getTime(), in2026.getTime());
    assert.equal(readTime(read(time(in2051))).getTime(), in2051.getTime());
    assert.equal(
      readTime(read(tlv(TAG.utcTime, new TextEncoder().encode("991231235959Z"))))
        .getUTCFullYear(),
      1999,
    );
    assert.throws(() => readTime(read(utf8("soon"))), /unsupported time/);
  });

  it("writes BOOLEAN, BIT STRING, UTF8String and context tags", () => {
    assert.equal(hex(boolean(true)), "0101ff");
    assert.equal(hex(boolean(false)), "010100");
    assert.equal(hex(bitString(Uint8Array.of(0x86), 1)), "03020186");
    assert.equal(hex(utf8("é")), "0c02c3a9");
    assert.equal(hex(explicit(0, integer(2))), "a003020102");
    assert.equal(hex(implicit(2, new TextEncoder().encode("a"))), "820161");
  });

  it("reads a SEQUENCE back into its items, and refuses what is cut short", () => {
    const encoded = sequence(integer(5), utf8("x"), sequence());
    const items = children(read(encoded));
    assert.deepEqual(items.map((item) => item.tag), [TAG.integer, TAG.utf8String, TAG.sequence]);
    assert.equal(hex(items[0].content), "05");
    assert.throws(() => read(encoded.subarray(0, encoded.length - 1)), /truncated content/);
    assert.throws(() => read(Uint8Array.of(0x30)), /truncated element/);
    assert.throws(() => read(Uint8Array.of(0x30, 0x80)), /unsupported length/); // indefinite
    assert.throws(() => read(Uint8Array.of(0x04, 0x82, 0x01)), /truncated length/);
  });
});
