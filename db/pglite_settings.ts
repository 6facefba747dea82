import { pgliteLimits } from "./pglite_health.ts";

/**
 * The server settings of every embedded engine. PostgreSQL's defaults (those initdb writes) size a server shared
 * by a hundred sessions: `shared_buffers` 128 MB. An engine has one session and one project, so its buffers are
 * small; the data benchmark keeps its targets with them (docs/benchmarks.md, footprint). The buffers are
 * resident from the engine's start (PostgreSQL initialises them), whether or not they are used.
 */
export function pgliteSettings(sharedBuffersMb = pgliteLimits.sharedBuffersMb): Record<string, string> {
  return {
    shared_buffers: `${sharedBuffersMb}MB`,
    // One session: the lock and process tables sized for 100 connections are memory no one uses.
    max_connections: "8",
    // Libraries loaded at start or at each session's start come from settings the project's SQL can write into
    // its data directory (postgresql.auto.conf): a start parameter outranks them. The engine loads only the
    // libraries it ships anyway (db/pglite_library_guard.ts).
    shared_preload_libraries: "",
    session_preload_libraries: "",
    local_preload_libraries: "",
  };
}
