/** One Server-Sent Events frame. */
export interface SseFrame {
  event: string;
  data: string;
  id?: string;
}

/** The frames of a `text/event-stream` body, as they arrive; comments (heartbeats) are skipped. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let frame: SseFrame = { event: "message", data: "" };
  let hasData = false;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      const lines = buffered.split(/\r?\n/);
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line === "") {
          if (hasData) yield frame;
          frame = { event: "message", data: "" };
          hasData = false;
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") {
            frame.data = hasData ? `${frame.data}\n${value}` : value;
            hasData = true;
          } else if (field === "event") frame.event = value;
          else if (field === "id") frame.id = value;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
