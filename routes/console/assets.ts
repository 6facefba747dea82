/** The console's static files: the client bundle (built by `deno task console:bundle`) and its stylesheet. */
const TYPES: Record<string, string> = {
  "console.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

const cache = new Map<string, Uint8Array<ArrayBuffer>>();

/** A console asset by file name, or null for any other name (no path ever reaches the file system). */
export async function consoleAsset(name: string): Promise<Response | null> {
  const type = TYPES[name];
  if (!type) return null;
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = await Deno.readFile(new URL(`./assets/${name}`, import.meta.url)) as Uint8Array<ArrayBuffer>;
    cache.set(name, bytes);
  }
  return new Response(bytes, {
    headers: { "content-type": type, "cache-control": "no-cache", "x-content-type-options": "nosniff" },
  });
}
