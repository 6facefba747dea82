import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** How many (method, path) answers the router remembers; the oldest is forgotten first. */
const MAX_ENTRIES = 2_000;

/**
 * CachedRouter is Hono's TrieRouter with a bounded memory of its answers. Our route table cannot use the
 * RegExpRouter (static and parameter segments share levels, e.g. `/v1/notifications/stats` and `/:id`), and a
 * trie walk per request was a measurable share of the whole middleware chain; most requests repeat a path.
 * Hono only reads a match result, so one result can serve many requests.
 */
export class CachedRouter<T> implements Router<T> {
  readonly name = "CachedRouter";
  readonly #inner = new TrieRouter<T>();
  readonly #answers = new Map<string, Result<T>>();

  add(method: string, path: string, handler: T): void {
    this.#answers.clear();
    this.#inner.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    let answer = this.#answers.get(key);
    if (answer) return answer;
    answer = this.#inner.match(method, path);
    if (this.#answers.size >= MAX_ENTRIES) this.#answers.delete(this.#answers.keys().next().value!);
    this.#answers.set(key, answer);
    return answer;
  }
}
