// A loopback TCP proxy that tests can break: cut every open connection, or refuse new ones for
// a while. Clients talk TLS through it to the real API server, unaware of it.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #refusing = false;
  port = 0;
  /** How many client connections were accepted. */
  connections = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  async start(): Promise<void> {
    this.#server = createServer((client) => {
      if (this.#refusing) {
        client.destroy();
        return;
      }
      this.connections++;
      const upstream = createConnection(this.#target);
      this.#sockets.add(client);
      this.#sockets.add(upstream);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    const address = this.#server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
  }

  /** Breaks every open connection at once, as a network failure would. */
  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  /** Refuses (closes at once) new connections while `refusing` is true. */
  refuse(refusing: boolean): void {
    this.#refusing = refusing;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}
