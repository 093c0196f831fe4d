/**
 * Request bodies a server answers before reading them whole (413, 415, 400, 404). A runtime's
 * server that answers while the client is still sending closes the connection with the body
 * unread, and the kernel then resets it: a client that does not wait for `100 Continue` (Node's
 * and Bun's) gets `ECONNRESET` instead of the answer (measured on Bun, behind the forwarder,
 * 10 resets in 10 for an 8 MiB body). Reading the rest and throwing it away, within a bound of
 * bytes and time, lets the client finish sending and read the answer on a connection that stays
 * open.
 *
 * @module
 */

/** Milliseconds spent at most reading and throwing away a body nobody reads. */
export const DISCARD_TIMEOUT_MS = 10_000;

/**
 * Reads `body` whole when it holds at most `limit` bytes. A longer one is read on and thrown
 * away, up to `discardLimit` bytes in all (within {@linkcode DISCARD_TIMEOUT_MS}), and
 * `undefined` returned.
 */
export async function readBody(
  body: ReadableStream<Uint8Array>,
  limit: number,
  discardLimit: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  // The deadline runs from the first byte past the limit: reading a good body is not bounded here.
  let deadline = Infinity;
  try {
    for (;;) {
      const { done, value } = await readBefore(reader, deadline);
      if (done) break;
      size += value.byteLength;
      if (size <= limit) {
        chunks.push(value);
        continue;
      }
      chunks.length = 0;
      if (deadline === Infinity) deadline = Date.now() + DISCARD_TIMEOUT_MS;
      if (size >= discardLimit) break;
    }
  } catch (err) {
    if (size <= limit) throw err;
  } finally {
    reader.releaseLock();
  }
  return size > limit ? undefined : joined(chunks, size);
}

/**
 * Reads and throws away what is left of `request`'s body when nobody read it, up to `limit`
 * bytes within {@linkcode DISCARD_TIMEOUT_MS}.
 */
export async function discardBody(request: Request, limit: number): Promise<void> {
  const body = request.body;
  if (!body || request.bodyUsed || body.locked) return;
  // A client waiting for `100 Continue` sends nothing unasked: reading would ask for the body.
  if (request.headers.get("expect")?.toLowerCase() === "100-continue") return;
  await readBody(body, -1, limit).catch(() => {});
}

async function readBefore(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  deadline: number,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (deadline === Infinity) return await reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      reader.read(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error("request body too slow")),
          Math.max(0, deadline - Date.now()),
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function joined(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  // A stream's chunks are views of ordinary ArrayBuffers.
  if (chunks.length === 1) return chunks[0] as Uint8Array<ArrayBuffer>;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
