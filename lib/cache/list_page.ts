/**
 * A list page split into its items without parsing them: the page's own fields are parsed,
 * and only the offsets of each item in the text are kept, so an informer parses one item at a
 * time as it stores it. Parsing a page of 5,000 ConfigMaps whole holds all 5,000 objects (with
 * the managedFields the store drops) until the last one is stored; they outlive the young
 * generation's collections and are promoted, which is what made a relist's peak. Parsed one by
 * one, an item lives until it is stored, and one the store already holds (same
 * resourceVersion, as most are at a relist) dies young. Measured on V8; on Bun a page parsed
 * whole costs less per cached object, so the informer splits pages on V8 only.
 *
 * @module
 */

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

/** A list page whose items are still text. */
export interface SplitListPage {
  /** The page's `metadata` (its resourceVersion and continue token), parsed. */
  metadata?: { continue?: string; resourceVersion?: string };
  /** How many items the page has. */
  readonly count: number;
  /**
   * Parses item `index` (each at most once: the caller lets go of it).
   *
   * @throws {SyntaxError} when the item is not JSON.
   */
  item(index: number): unknown;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The end (exclusive) of the string whose opening quote is at `i`, or -1. */
function stringEnd(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    for (let b = quote - 1; text.charCodeAt(b) === BACKSLASH; b--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * The end (exclusive) of the JSON value that starts at `i`, or -1. Only the nesting and the
 * strings are followed: what is in between is checked when the value is parsed.
 */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === QUOTE) return stringEnd(text, i);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    let j = i;
    for (; j < text.length; j++) {
      const c = text.charCodeAt(j);
      if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isSpace(c)) break;
    }
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < text.length;) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      j = stringEnd(text, j);
      if (j < 0) return -1;
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return j + 1;
    }
    j++;
  }
  return -1;
}

/**
 * Splits a list page (`{"kind":…,"metadata":{…},"items":[…]}`, its keys in any order) into its
 * metadata and the offsets of its items; `undefined` when the text is not a JSON object of that
 * shape, for the caller to parse it whole (and report what is wrong). Every value but the items
 * is parsed here, so a malformed page is found before any item is handed out; each item is
 * checked when it is parsed.
 *
 * @example
 * ```ts ignore
 * const page = splitListPage('{"metadata":{"resourceVersion":"7"},"items":[{"a":1},{"b":2}]}');
 * console.log(page?.metadata?.resourceVersion, page?.count, page?.item(1)); // 7 2 { b: 2 }
 * ```
 */
export function splitListPage(text: string): SplitListPage | undefined {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined;
  i = skipSpace(text, i + 1);
  let metadata: SplitListPage["metadata"];
  let starts: number[] = [];
  let ends: number[] = [];
  if (text.charCodeAt(i) === CLOSE_BRACE) i++;
  else {
    for (;;) {
      if (text.charCodeAt(i) !== QUOTE) return undefined;
      const keyEnd = stringEnd(text, i);
      if (keyEnd < 0) return undefined;
      let key: unknown;
      try {
        key = JSON.parse(text.slice(i, keyEnd));
      } catch {
        return undefined;
      }
      i = skipSpace(text, keyEnd);
      if (text.charCodeAt(i) !== COLON) return undefined;
      i = skipSpace(text, i + 1);
      if (key === "items" && text.charCodeAt(i) === OPEN_BRACKET) {
        starts = [];
        ends = [];
        i = skipSpace(text, i + 1);
        if (text.charCodeAt(i) === CLOSE_BRACKET) i++;
        else {
          for (;;) {
            const end = valueEnd(text, i);
            if (end < 0) return undefined;
            starts.push(i);
            ends.push(end);
            i = skipSpace(text, end);
            const c = text.charCodeAt(i);
            if (c === CLOSE_BRACKET) {
              i++;
              break;
            }
            if (c !== COMMA) return undefined;
            i = skipSpace(text, i + 1);
          }
        }
      } else {
        const end = valueEnd(text, i);
        if (end < 0) return undefined;
        let value: unknown;
        try {
          value = JSON.parse(text.slice(i, end));
        } catch {
          return undefined;
        }
        if (key === "items") return undefined;
        if (key === "metadata") {
          if (typeof value !== "object" || value === null || Array.isArray(value)) {
            return undefined;
          }
          metadata = value as SplitListPage["metadata"];
        }
        i = end;
      }
      i = skipSpace(text, i);
      const c = text.charCodeAt(i);
      if (c === CLOSE_BRACE) {
        i++;
        break;
      }
      if (c !== COMMA) return undefined;
      i = skipSpace(text, i + 1);
    }
  }
  if (skipSpace(text, i) !== text.length) return undefined;
  const itemStarts = starts;
  const itemEnds = ends;
  return {
    metadata,
    count: itemStarts.length,
    item: (index) => JSON.parse(text.slice(itemStarts[index], itemEnds[index])),
  };
}

/**
 * A list page, split ({@linkcode splitListPage}) when `split` is true and the splitter follows
 * it, otherwise parsed whole; an empty text is an empty page.
 *
 * @throws {SyntaxError} when the text is not JSON; {@linkcode TypeError} when it is not an object.
 */
export function parseListPage(text: string, split = true): SplitListPage {
  if (text.length === 0) return { count: 0, item: () => undefined };
  const page = split ? splitListPage(text) : undefined;
  if (page) return page;
  const whole: unknown = JSON.parse(text);
  if (typeof whole !== "object" || whole === null || Array.isArray(whole)) {
    throw new TypeError("a list page that is not an object");
  }
  const { metadata, items } = whole as { metadata?: SplitListPage["metadata"]; items?: unknown };
  const list: unknown[] = Array.isArray(items) ? items : [];
  return {
    metadata,
    count: list.length,
    item: (index) => {
      const item = list[index];
      // The store keeps a copy when it transforms: the page lets go of each item it hands out.
      list[index] = undefined;
      return item;
    },
  };
}
