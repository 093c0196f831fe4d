/**
 * Label and field selectors evaluated in memory, with the API server's semantics, so that a
 * cache answers a list exactly as the server would (`k8s.io/apimachinery/pkg/labels` and
 * `pkg/fields`).
 *
 * - {@linkcode parseLabelSelector} reads the string grammar (`app=web,tier in (a,b),!canary`)
 *   and the structured form (`matchLabels`, `matchExpressions`), validates keys and values
 *   like Kubernetes, and matches label maps.
 * - {@linkcode parseFieldSelector} reads `field=value` terms with the API's escapes (`\,`,
 *   `\=`, `\\`) and matches objects by dotted paths such as `status.phase`.
 *
 * @module
 */

import type {
  FieldSelectorInput,
  LabelSelectorInput,
  LabelSelectorObject,
} from "../client/options.ts";

/**
 * An operator of a label requirement. `=` also stands for `==`; `!` is "does not exist";
 * `gt` and `lt` compare integers (the string forms `a>1` and `a<1`, which the API accepts).
 */
export type LabelSelectorOperator = "=" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

/** One requirement of a label selector; a selector matches when all of them do. */
export interface LabelRequirement {
  /** The label key, e.g. `app.kubernetes.io/name`. */
  readonly key: string;
  /** How the label is compared. */
  readonly operator: LabelSelectorOperator;
  /**
   * The values: one for `=`, `!=`, `gt` and `lt`; a sorted set without duplicates for `in`
   * and `notin`; none for `exists` and `!`.
   */
  readonly values: readonly string[];
}

/**
 * A parsed label selector. Build one with {@linkcode parseLabelSelector}.
 *
 * @example
 * ```ts
 * import { parseLabelSelector } from "@rudder/operator/cache";
 *
 * const selector = parseLabelSelector("tier in (web,api), !canary");
 * console.log(selector.matches({ tier: "web" })); // true
 * console.log(selector.matches({ tier: "web", canary: "true" })); // false
 * console.log(selector.toString()); // !canary,tier in (api,web)
 * ```
 */
export interface ParsedLabelSelector {
  /** The requirements, sorted by key. */
  readonly requirements: readonly LabelRequirement[];
  /** True when there are no requirements: the selector selects everything. */
  readonly empty: boolean;
  /** Whether a label map satisfies every requirement; `undefined` counts as no labels. */
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** The canonical string form the API accepts, e.g. `a=b,c in (d,e)`; `""` when empty. */
  toString(): string;
}

/** The operator of a field requirement; `=` and `==` mean the same. */
export type FieldSelectorOperator = "=" | "==" | "!=";

/** One requirement of a field selector; a selector matches when all of them do. */
export interface FieldRequirement {
  /** A dotted path into the object, e.g. `metadata.name` or `status.phase`. */
  readonly field: string;
  /** How the field is compared. */
  readonly operator: FieldSelectorOperator;
  /** The value, unescaped. */
  readonly value: string;
}

/**
 * A parsed field selector. Build one with {@linkcode parseFieldSelector}.
 *
 * @example
 * ```ts
 * import { parseFieldSelector } from "@rudder/operator/cache";
 *
 * const selector = parseFieldSelector("status.phase!=Running,spec.nodeName=");
 * console.log(selector.matches({ status: { phase: "Pending" }, spec: {} })); // true
 * console.log(selector.matches({ status: { phase: "Running" }, spec: {} })); // false
 * ```
 */
export interface ParsedFieldSelector {
  /** The requirements, in canonical order. */
  readonly requirements: readonly FieldRequirement[];
  /** True when there are no requirements: the selector selects everything. */
  readonly empty: boolean;
  /**
   * Whether an object satisfies every requirement. A missing (or `null`) field reads as `""`,
   * as in the API server's field sets; numbers and booleans read as their string form; an
   * object or array equals no value.
   */
  matches(obj: unknown): boolean;
  /** The canonical string form the API accepts, with values escaped; `""` when empty. */
  toString(): string;
}

/**
 * A selector that cannot be parsed or is not valid. The message names the selector, the
 * problem and where it is: a character position (0-based) in a string selector, or the entry
 * of a structured one.
 *
 * @example
 * ```ts
 * import { parseLabelSelector, SelectorError } from "@rudder/operator/cache";
 *
 * try {
 *   parseLabelSelector("app in (web");
 * } catch (err) {
 *   if (err instanceof SelectorError) console.log(err.position); // 11
 * }
 * ```
 */
export class SelectorError extends Error {
  /** The selector as given (structured selectors as JSON). */
  readonly selector: string;
  /** 0-based character position of the problem in a string selector. */
  readonly position?: number;

  /** Builds the error; `message` is the whole message. */
  constructor(message: string, selector: string, position?: number) {
    super(message);
    this.name = "SelectorError";
    this.selector = selector;
    if (position !== undefined) this.position = position;
  }
}

// ---------------------------------------------------------------------------------------------
// Validation of label keys and values (k8s.io/apimachinery/pkg/util/validation)

const QUALIFIED_NAME_MAX = 63;
const LABEL_VALUE_MAX = 63;
const DNS_SUBDOMAIN_MAX = 253;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_RULE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
  "alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')";

/** What is wrong with a label key, or undefined when it is a valid qualified name. */
function labelKeyProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) {
    return "must be a name with an optional DNS subdomain prefix and one '/' " +
      "(e.g. 'example.com/MyName')";
  }
  const name = parts.length === 2 ? parts[1] : parts[0];
  if (parts.length === 2) {
    const prefix = parts[0];
    if (prefix === "") return "has an empty prefix before '/'";
    if (prefix.length > DNS_SUBDOMAIN_MAX) {
      return `has a prefix longer than ${DNS_SUBDOMAIN_MAX} characters`;
    }
    if (!DNS_SUBDOMAIN.test(prefix)) {
      return `has a prefix "${prefix}" that is not a lowercase DNS subdomain: it must consist ` +
        "of lowercase alphanumeric characters, '-' or '.', and must start and end with an " +
        "alphanumeric character (e.g. 'example.com')";
    }
  }
  if (name === "") return "has an empty name part";
  if (name.length > QUALIFIED_NAME_MAX) {
    return `has a name part longer than ${QUALIFIED_NAME_MAX} characters`;
  }
  if (!QUALIFIED_NAME.test(name)) return `has a name part "${name}" that ${NAME_RULE}`;
  return undefined;
}

/** What is wrong with a label value, or undefined when it is valid (empty is valid). */
function labelValueProblem(value: string): string | undefined {
  if (value.length > LABEL_VALUE_MAX) {
    return `is longer than ${LABEL_VALUE_MAX} characters`;
  }
  if (!LABEL_VALUE.test(value)) {
    return "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must " +
      "start and end with an alphanumeric character (e.g. 'MyValue', 'my_value' or '12345')";
  }
  return undefined;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Parses a base-10 64-bit integer like Go's `strconv.ParseInt(s, 10, 64)`; undefined if not. */
function parseInt64(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < INT64_MIN || value > INT64_MAX ? undefined : value;
}

// ---------------------------------------------------------------------------------------------
// Label selectors

// From this many values on, `in`/`notin` look values up in a Set instead of scanning.
const VALUE_SET_THRESHOLD = 8;

class LabelRequirementImpl implements LabelRequirement {
  readonly key: string;
  readonly operator: LabelSelectorOperator;
  readonly values: readonly string[];
  readonly #set: ReadonlySet<string> | undefined;
  readonly #number: bigint | undefined;

  constructor(key: string, operator: LabelSelectorOperator, values: readonly string[]) {
    this.key = key;
    this.operator = operator;
    this.values = Object.freeze([...values]);
    this.#set = values.length >= VALUE_SET_THRESHOLD ? new Set(values) : undefined;
    this.#number = operator === "gt" || operator === "lt" ? parseInt64(values[0]) : undefined;
    Object.freeze(this);
  }

  #has(value: string): boolean {
    return this.#set ? this.#set.has(value) : this.values.includes(value);
  }

  matches(labels: Readonly<Record<string, string>>): boolean {
    const present = Object.hasOwn(labels, this.key);
    switch (this.operator) {
      case "=":
        return present && labels[this.key] === this.values[0];
      case "in":
        return present && this.#has(labels[this.key]);
      case "!=":
        return !present || labels[this.key] !== this.values[0];
      case "notin":
        return !present || !this.#has(labels[this.key]);
      case "exists":
        return present;
      case "!":
        return !present;
      case "gt":
      case "lt": {
        if (!present) return false;
        const actual = parseInt64(labels[this.key]);
        if (actual === undefined || this.#number === undefined) return false;
        return this.operator === "gt" ? actual > this.#number : actual < this.#number;
      }
    }
  }

  toString(): string {
    switch (this.operator) {
      case "exists":
        return this.key;
      case "!":
        return `!${this.key}`;
      case "in":
      case "notin":
        return `${this.key} ${this.operator} (${this.values.join(",")})`;
      case "gt":
        return `${this.key}>${this.values[0]}`;
      case "lt":
        return `${this.key}<${this.values[0]}`;
      default:
        return `${this.key}${this.operator}${this.values[0]}`;
    }
  }
}

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

class LabelSelectorImpl implements ParsedLabelSelector {
  readonly requirements: readonly LabelRequirementImpl[];
  readonly empty: boolean;

  constructor(requirements: LabelRequirementImpl[]) {
    // Stable sort by key, as the API server orders requirements.
    this.requirements = Object.freeze(
      requirements.map((r, i) => ({ r, i }))
        .sort((a, b) => a.r.key < b.r.key ? -1 : a.r.key > b.r.key ? 1 : a.i - b.i)
        .map(({ r }) => r),
    );
    this.empty = requirements.length === 0;
    Object.freeze(this);
  }

  matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    const set = labels ?? NO_LABELS;
    for (const requirement of this.requirements) if (!requirement.matches(set)) return false;
    return true;
  }

  toString(): string {
    return this.requirements.map((r) => r.toString()).join(",");
  }
}

type TokenType =
  | "ident"
  | "in"
  | "notin"
  | "!"
  | "="
  | "=="
  | "!="
  | ">"
  | "<"
  | "("
  | ")"
  | ","
  | "end";

interface Token {
  type: TokenType;
  text: string;
  pos: number;
}

const SPECIAL = new Set(["=", "!", "(", ")", ",", ">", "<"]);
const WHITESPACE = new Set([" ", "\t", "\r", "\n"]);

/** Splits a label selector into tokens the way the API server's lexer does. */
function lexLabelSelector(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  for (;;) {
    while (i < input.length && WHITESPACE.has(input[i])) i++;
    if (i >= input.length) {
      tokens.push({ type: "end", text: "", pos: i });
      return tokens;
    }
    const start = i;
    if (SPECIAL.has(input[i])) {
      const two = input.slice(i, i + 2);
      const text = two === "!=" || two === "==" ? two : input[i];
      i += text.length;
      tokens.push({ type: text as TokenType, text, pos: start });
      continue;
    }
    while (i < input.length && !SPECIAL.has(input[i]) && !WHITESPACE.has(input[i])) i++;
    const text = input.slice(start, i);
    const type = text === "in" ? "in" : text === "notin" ? "notin" : "ident";
    tokens.push({ type, text, pos: start });
  }
}

/** A value with the position where it was written, for error messages. */
interface Located {
  text: string;
  pos: number;
}

/** A recursive-descent parser of the label selector grammar, following the API server's. */
class LabelSelectorParser {
  readonly #input: string;
  readonly #tokens: Token[];
  #next = 0;

  constructor(input: string) {
    this.#input = input;
    this.#tokens = lexLabelSelector(input);
  }

  /** The next token; `in` and `notin` read as identifiers where a key or value is expected. */
  #peek(asValue = true): Token {
    const token = this.#tokens[this.#next];
    return asValue && (token.type === "in" || token.type === "notin")
      ? { ...token, type: "ident" }
      : token;
  }

  #consume(asValue = true): Token {
    const token = this.#peek(asValue);
    if (token.type !== "end") this.#next++;
    return token;
  }

  #fail(message: string, pos: number): never {
    throw new SelectorError(
      `invalid label selector ${JSON.stringify(this.#input)}: ${message}`,
      this.#input,
      pos,
    );
  }

  #unexpected(token: Token, expected: string): never {
    const found = token.type === "end" ? "end of string" : `'${token.text}'`;
    this.#fail(`found ${found} at position ${token.pos}, expected ${expected}`, token.pos);
  }

  parse(): LabelRequirementImpl[] {
    const requirements: LabelRequirementImpl[] = [];
    if (this.#peek().type === "end") return requirements;
    for (;;) {
      const token = this.#peek();
      if (token.type !== "ident" && token.type !== "!") {
        this.#unexpected(
          token,
          requirements.length === 0 ? "'!', a key or end of string" : "'!' or a key after ','",
        );
      }
      requirements.push(this.#requirement());
      const after = this.#consume();
      if (after.type === "end") return requirements;
      if (after.type !== ",") this.#unexpected(after, "',' or end of string");
    }
  }

  #requirement(): LabelRequirementImpl {
    let token = this.#consume();
    const negated = token.type === "!";
    if (negated) token = this.#consume();
    if (token.type !== "ident") this.#unexpected(token, "a key");
    const key = token.text;
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) this.#fail(`key "${key}" at position ${token.pos} ${keyProblem}`, token.pos);
    if (negated) return new LabelRequirementImpl(key, "!", []);
    const lookahead = this.#peek();
    if (lookahead.type === "end" || lookahead.type === ",") {
      return new LabelRequirementImpl(key, "exists", []);
    }

    const opToken = this.#consume(false);
    let operator: LabelSelectorOperator;
    switch (opToken.type) {
      case "in":
      case "notin":
        operator = opToken.type;
        break;
      case "=":
      case "==":
        operator = "=";
        break;
      case "!=":
        operator = "!=";
        break;
      case ">":
        operator = "gt";
        break;
      case "<":
        operator = "lt";
        break;
      default:
        this.#unexpected(opToken, "an operator (in, notin, =, ==, !=, >, <)");
    }

    const located = operator === "in" || operator === "notin"
      ? this.#valueSet()
      : this.#exactValue();
    for (const { text, pos } of located) {
      const problem = labelValueProblem(text);
      if (problem) {
        this.#fail(`value "${text}" of key "${key}" at position ${pos} ${problem}`, pos);
      }
      if ((operator === "gt" || operator === "lt") && parseInt64(text) === undefined) {
        this.#fail(
          `value "${text}" of key "${key}" at position ${pos} must be an integer for ` +
            `'${opToken.text}'`,
          pos,
        );
      }
    }
    const values = operator === "in" || operator === "notin"
      ? [...new Set(located.map((v) => v.text))].sort()
      : [located[0].text];
    return new LabelRequirementImpl(key, operator, values);
  }

  /** The value after `=`, `==`, `!=`, `>` or `<`; nothing before `,` or the end is `""`. */
  #exactValue(): Located[] {
    const lookahead = this.#peek();
    if (lookahead.type === "end" || lookahead.type === ",") {
      return [{ text: "", pos: lookahead.pos }];
    }
    const token = this.#consume();
    if (token.type !== "ident") this.#unexpected(token, "a value");
    return [{ text: token.text, pos: token.pos }];
  }

  /**
   * `(a,b)`. Like the API server: `()` is the set `{""}`, and an empty place between commas or
   * next to a parenthesis is the value `""` (`(a,)`, `(,a)`, `(a,,b)`).
   */
  #valueSet(): Located[] {
    const open = this.#consume();
    if (open.type !== "(") this.#unexpected(open, "'('");
    const first = this.#peek();
    if (first.type === ")") {
      this.#consume();
      return [{ text: "", pos: first.pos }];
    }
    if (first.type !== "ident" && first.type !== ",") {
      this.#unexpected(first, "a value, ',' or ')'");
    }
    const values: Located[] = [];
    for (;;) {
      const token = this.#consume();
      if (token.type === "ident") {
        values.push({ text: token.text, pos: token.pos });
        const after = this.#peek();
        if (after.type === ")") break;
        if (after.type !== ",") this.#unexpected(after, "',' or ')'");
      } else if (token.type === ",") {
        if (values.length === 0) values.push({ text: "", pos: token.pos });
        const after = this.#peek();
        if (after.type === ")") {
          values.push({ text: "", pos: after.pos });
          break;
        }
        if (after.type === ",") {
          this.#consume();
          values.push({ text: "", pos: after.pos });
        }
      } else {
        this.#unexpected(token, "a value or ','");
      }
    }
    this.#consume(); // the ")" seen above
    return values;
  }
}

const STRUCTURED_OPERATORS: Readonly<Record<string, LabelSelectorOperator>> = {
  In: "in",
  NotIn: "notin",
  Exists: "exists",
  DoesNotExist: "!",
};

/** Builds the requirements of a structured selector (metav1.LabelSelectorAsSelector). */
function structuredRequirements(input: LabelSelectorObject): LabelRequirementImpl[] {
  const text = JSON.stringify(input);
  const fail = (where: string, problem: string): never => {
    throw new SelectorError(`invalid label selector: ${where}: ${problem}`, text);
  };
  const requirements: LabelRequirementImpl[] = [];
  for (const [key, value] of Object.entries(input.matchLabels ?? {})) {
    const where = `matchLabels[${JSON.stringify(key)}]`;
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) fail(where, `key ${keyProblem}`);
    if (typeof value !== "string") fail(where, "value must be a string");
    const valueProblem = labelValueProblem(value);
    if (valueProblem) fail(where, `value "${value}" ${valueProblem}`);
    requirements.push(new LabelRequirementImpl(key, "=", [value]));
  }
  (input.matchExpressions ?? []).forEach((expression, i) => {
    const { key, operator: name, values = [] } = expression;
    const where = `matchExpressions[${i}] (key ${JSON.stringify(key)}, operator ${name})`;
    if (typeof key !== "string") fail(where, "key must be a string");
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) fail(where, `key ${keyProblem}`);
    const operator = Object.hasOwn(STRUCTURED_OPERATORS, name)
      ? STRUCTURED_OPERATORS[name]
      : fail(where, `operator must be one of In, NotIn, Exists, DoesNotExist`);
    if (!Array.isArray(values) || values.some((v) => typeof v !== "string")) {
      fail(where, "values must be a list of strings");
    }
    if ((operator === "in" || operator === "notin") && values.length === 0) {
      fail(where, "values must not be empty for In and NotIn");
    }
    if ((operator === "exists" || operator === "!") && values.length > 0) {
      fail(where, "values must be empty for Exists and DoesNotExist");
    }
    for (const value of values) {
      const problem = labelValueProblem(value);
      if (problem) fail(where, `value "${value}" ${problem}`);
    }
    requirements.push(new LabelRequirementImpl(key, operator, [...new Set(values)].sort()));
  });
  return requirements;
}

/**
 * Parses a label selector: the API's string form or a structured `metav1.LabelSelector`.
 *
 * The string grammar is the API server's: requirements separated by `,`, each one of `key`,
 * `!key`, `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`,
 * `key>1` or `key<1`; whitespace between tokens is ignored; `key=` means the empty value, and
 * `key in ()` the set holding only the empty value. Keys must be qualified names
 * (`[prefix/]name`: a DNS-subdomain prefix of at most 253 characters, a name of at most 63),
 * values valid label values (at most 63 characters, possibly empty).
 *
 * `!=` and `notin` match objects without the label, as the API server does. An empty string
 * or an empty structured selector selects everything.
 *
 * @throws {SelectorError} naming the problem and its position or entry.
 *
 * @example
 * ```ts
 * import { parseLabelSelector } from "@rudder/operator/cache";
 *
 * const s = parseLabelSelector({
 *   matchLabels: { app: "web" },
 *   matchExpressions: [{ key: "env", operator: "NotIn", values: ["dev"] }],
 * });
 * console.log(s.toString()); // app=web,env notin (dev)
 * console.log(s.matches({ app: "web" })); // true: no env label is not "dev"
 * console.log(parseLabelSelector("").empty); // true
 * ```
 */
export function parseLabelSelector(input: LabelSelectorInput): ParsedLabelSelector {
  if (typeof input === "string") {
    return new LabelSelectorImpl(new LabelSelectorParser(input).parse());
  }
  if (typeof input !== "object" || input === null) {
    throw new SelectorError(
      "invalid label selector: expected a string or { matchLabels, matchExpressions }",
      String(input),
    );
  }
  return new LabelSelectorImpl(structuredRequirements(input));
}

/**
 * True for a parsed {@linkcode ParsedLabelSelector} (as opposed to its string or structured input).
 *
 * @example
 * ```ts
 * import { isLabelSelector } from "./selector.ts";
 * import { parseLabelSelector } from "@rudder/operator/cache";
 *
 * console.log(isLabelSelector(parseLabelSelector("a=b"))); // true
 * console.log(isLabelSelector("a=b")); // false
 * ```
 */
export function isLabelSelector(value: unknown): value is ParsedLabelSelector {
  return value instanceof LabelSelectorImpl ||
    (typeof value === "object" && value !== null && "requirements" in value &&
      typeof (value as { matches?: unknown }).matches === "function");
}

// ---------------------------------------------------------------------------------------------
// Field selectors

/**
 * Escapes a value for a field selector string: `\` → `\\`, `,` → `\,`, `=` → `\=`.
 *
 * @example
 * ```ts
 * import { escapeFieldSelectorValue } from "./selector.ts";
 *
 * console.log(`metadata.name=${escapeFieldSelectorValue("a,b")}`); // metadata.name=a\,b
 * ```
 */
export function escapeFieldSelectorValue(value: string): string {
  return value.replace(/[\\,=]/g, (ch) => `\\${ch}`);
}

/** What is wrong with an escaped value, or the unescaped value. */
function unescapeValue(raw: string): { value: string } | { problem: string; offset: number } {
  if (!/[\\,=]/.test(raw)) return { value: raw };
  let value = "";
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (ch === "\\") {
      const next = raw[i + 1];
      if (next === undefined) return { problem: "ends with a lone '\\'", offset: i };
      if (next !== "\\" && next !== "," && next !== "=") {
        return {
          problem:
            `has the invalid escape sequence '\\${next}' (only \\\\, \\, and \\= are allowed)`,
          offset: i,
        };
      }
      value += next;
      i++;
    } else if (ch === "," || ch === "=") {
      return { problem: `has an unescaped '${ch}' (write it as '\\${ch}')`, offset: i };
    } else {
      value += ch;
    }
  }
  return { value };
}

/** Reads a field's value as the API server's field sets would: a string, or undefined. */
function fieldString(obj: unknown, path: readonly string[]): string | undefined {
  let current = obj;
  for (const segment of path) {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return "";
    current = (current as Record<string, unknown>)[segment];
  }
  switch (typeof current) {
    case "string":
      return current;
    case "number":
    case "boolean":
    case "bigint":
      return String(current);
    case "undefined":
      return "";
    default:
      return current === null ? "" : undefined;
  }
}

class FieldRequirementImpl implements FieldRequirement {
  readonly field: string;
  readonly operator: FieldSelectorOperator;
  readonly value: string;
  readonly #path: readonly string[];

  constructor(field: string, operator: FieldSelectorOperator, value: string) {
    this.field = field;
    this.operator = operator;
    this.value = value;
    this.#path = field.split(".");
    Object.freeze(this);
  }

  matches(obj: unknown): boolean {
    const actual = fieldString(obj, this.#path);
    return this.operator === "!=" ? actual !== this.value : actual === this.value;
  }

  toString(): string {
    return `${this.field}${this.operator === "!=" ? "!=" : "="}${
      escapeFieldSelectorValue(this.value)
    }`;
  }
}

class FieldSelectorImpl implements ParsedFieldSelector {
  readonly requirements: readonly FieldRequirementImpl[];
  readonly empty: boolean;

  constructor(requirements: FieldRequirementImpl[]) {
    const keyed = requirements.map((r) => ({ r, text: r.toString() }));
    keyed.sort((a, b) => a.text < b.text ? -1 : a.text > b.text ? 1 : 0);
    this.requirements = Object.freeze(keyed.map(({ r }) => r));
    this.empty = requirements.length === 0;
    Object.freeze(this);
  }

  matches(obj: unknown): boolean {
    for (const requirement of this.requirements) if (!requirement.matches(obj)) return false;
    return true;
  }

  toString(): string {
    return this.requirements.map((r) => r.toString()).join(",");
  }
}

const FIELD_OPERATORS: readonly FieldSelectorOperator[] = ["!=", "==", "="];

/** What is wrong with a field path, or undefined. */
function fieldProblem(field: string): string | undefined {
  if (field === "") return "has no field name";
  if (/\s/.test(field)) return `has a field name ${JSON.stringify(field)} with whitespace`;
  return undefined;
}

/** Parses the string form (fields.ParseSelector). */
function parseFieldSelectorString(input: string): FieldRequirementImpl[] {
  const fail = (message: string, pos: number): never => {
    throw new SelectorError(
      `invalid field selector ${JSON.stringify(input)}: ${message}`,
      input,
      pos,
    );
  };
  // Split on commas not escaped by a backslash; the backslashes stay for unescaping.
  const terms: Located[] = [];
  let start = 0;
  for (let i = 0; i < input.length; i++) {
    if (input[i] === "\\") i++;
    else if (input[i] === ",") {
      terms.push({ text: input.slice(start, i), pos: start });
      start = i + 1;
    }
  }
  if (input !== "") terms.push({ text: input.slice(start), pos: start });

  const requirements: FieldRequirementImpl[] = [];
  for (const term of terms) {
    if (term.text === "") continue;
    // The first operator in the term splits it: fields have no escapes.
    let split: { at: number; operator: FieldSelectorOperator } | undefined;
    for (let i = 0; i < term.text.length && !split; i++) {
      const operator = FIELD_OPERATORS.find((op) => term.text.startsWith(op, i));
      if (operator) split = { at: i, operator };
    }
    if (!split) {
      fail(
        `term "${term.text}" at position ${term.pos} has no operator; expected ` +
          "field=value, field==value or field!=value",
        term.pos,
      );
    }
    const { at, operator } = split!;
    const field = term.text.slice(0, at);
    const problem = fieldProblem(field);
    if (problem) fail(`term "${term.text}" at position ${term.pos} ${problem}`, term.pos);
    const rawStart = term.pos + at + operator.length;
    const unescaped = unescapeValue(term.text.slice(at + operator.length));
    if ("problem" in unescaped) {
      const pos = rawStart + unescaped.offset;
      fail(
        `the value of "${field}" in term "${term.text}" ${unescaped.problem} at position ${pos}`,
        pos,
      );
    }
    requirements.push(
      new FieldRequirementImpl(field, operator, (unescaped as { value: string }).value),
    );
  }
  return requirements;
}

/**
 * Parses a field selector: the API's string form (`metadata.name=a,status.phase!=Failed`) or
 * `{ field: value }` pairs (exact matches, values not escaped).
 *
 * In the string form, terms are separated by unescaped commas; each term is `field=value`,
 * `field==value` or `field!=value`, split at its first operator; values escape `\`, `,` and `=`
 * with a backslash, and any other escape, a lone backslash or an unescaped `,` or `=` in a value
 * is an error, as in the API server. Empty terms are skipped; `""` selects everything.
 *
 * @throws {SelectorError} naming the problem and its position.
 *
 * @example
 * ```ts
 * import { parseFieldSelector } from "@rudder/operator/cache";
 *
 * const s = parseFieldSelector(String.raw`metadata.name=a\,b`);
 * console.log(s.requirements[0].value); // a,b
 * console.log(s.matches({ metadata: { name: "a,b" } })); // true
 * console.log(parseFieldSelector({ "spec.nodeName": "n1" }).toString()); // spec.nodeName=n1
 * ```
 */
export function parseFieldSelector(input: FieldSelectorInput): ParsedFieldSelector {
  if (typeof input === "string") return new FieldSelectorImpl(parseFieldSelectorString(input));
  if (typeof input !== "object" || input === null) {
    throw new SelectorError(
      "invalid field selector: expected a string or { field: value } pairs",
      String(input),
    );
  }
  const text = JSON.stringify(input);
  const requirements = Object.entries(input).map(([field, value]) => {
    const problem = fieldProblem(field) ??
      (typeof value === "string" ? undefined : `has a value that is not a string`);
    if (problem) {
      throw new SelectorError(
        `invalid field selector: field ${JSON.stringify(field)} ${problem}`,
        text,
      );
    }
    return new FieldRequirementImpl(field, "=", value);
  });
  return new FieldSelectorImpl(requirements);
}

/**
 * True for a parsed {@linkcode ParsedFieldSelector} (as opposed to its string or `{ field: value }`
 * input).
 *
 * @example
 * ```ts
 * import { isFieldSelector } from "./selector.ts";
 * import { parseFieldSelector } from "@rudder/operator/cache";
 *
 * console.log(isFieldSelector(parseFieldSelector("a=b"))); // true
 * console.log(isFieldSelector({ a: "b" })); // false
 * ```
 */
export function isFieldSelector(value: unknown): value is ParsedFieldSelector {
  return value instanceof FieldSelectorImpl ||
    (typeof value === "object" && value !== null && "requirements" in value &&
      typeof (value as { matches?: unknown }).matches === "function");
}
