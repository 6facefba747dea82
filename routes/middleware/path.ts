/** The path of an absolute URL as the router sees it (a URL with escapes is parsed in full). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  if (start < 0) return "/";
  let end = url.length;
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x25) return new URL(url).pathname; // %
    if (c === 0x3f || c === 0x23) { // ? #
      end = i;
      break;
    }
  }
  return url.slice(start, end);
}
