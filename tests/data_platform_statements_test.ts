// The project's SQL cannot take over the platform's statements in a data request or lift its statement timeout:
// a function that turns the timeout off and puts `public` before `pg_catalog` on the search path does not make
// the platform's next statement (reading `response.status`) run a shadow `current_setting`, and a pre-request that
// turns it off does not free the request's own statement from it, nor does a function that traps the cancel.
import { assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, within } from "./harness.ts";

const SQL = `
create function public.current_setting(text, boolean) returns text language plpgsql as $$
begin
  if $1 = 'response.status' then return '418'; end if;
  return pg_catalog.current_setting($1, $2);
end $$;
create function public.arm() returns int language sql as $$
  select pg_catalog.set_config('statement_timeout', '0', true),
         pg_catalog.set_config('search_path', 'public, pg_catalog', true);
  select 1
$$;
create function public.slow() returns int language sql as $$ select 1 from pg_catalog.pg_sleep(4) $$;
-- Traps every cancel, the statement timeout's included: only the end of its session stops it.
create function public.trap() returns int language plpgsql as $$
begin
  loop
    begin
      perform pg_catalog.pg_sleep(0.05);
    exception when query_canceled then null;
    end;
  end loop;
end $$;
create function public.pre() returns void language sql as $$
  select pg_catalog.set_config('statement_timeout', '0', true)
$$;
grant execute on all functions in schema public to anon;
notify pgrst, 'reload schema';
`;

Deno.test("data requests: the platform's statements after the project's SQL call pg_catalog's functions", async (t) => {
  // PGlite cannot interrupt a statement: its engine, stuck in the trap, is given up and reopened after 6 s
  // (more than the 4 s of slow()).
  const p = await startPlatform({ DATA_STATEMENT_TIMEOUT_MS: "1000", PGLITE_STALL_MS: "6000" });
  try {
    await ownerSql(p, SQL);
    const call = async (fn: string) => {
      const res = await p.fetch(`/rest/v1/rpc/${fn}`, { headers: { apikey: p.publicKey } });
      const body = await res.json();
      return [res.status, body.code];
    };
    await t.step(
      "a statement after the project's SQL shadowed current_setting is the platform's own",
      async () => {
        // The platform reads response.status with pg_catalog's function: the shadow (which says 418) never runs.
        let next = await call("arm");
        if (!Deno.env.get("DATABASE_URL") && next[0] === 503) {
          // PGlite: a call the stuck engine held fails with 57P01 when that engine is given up.
          assertEquals(next, [503, "57P01"]);
          next = await call("arm");
        }
        assertEquals(next, [200, undefined]);
      },
    );
    await t.step(
      "a pre-request that turns the timeout off: the next statement is still bounded",
      async () => {
        const set = await p.fetch("/v1/project/data-settings", {
          method: "PATCH",
          headers: { apikey: p.secretKey },
          json: { pre_request: "pre" },
        });
        assertEquals(set.status, 200);
        await set.body?.cancel();
        const [status, code] = await call("slow");
        assertEquals(code, "57014", `status ${status}`);
      },
    );
    await t.step(
      "a function that traps its timeout: the request still ends, and the next one answers",
      async () => {
        // On PostgreSQL the session is ended a second past the timeout (no SQL can trap that).
        // trap() never ends by itself: a liveness bound (60 s), not a timing claim, on the platform's ending it.
        const trapped = await within(call("trap"), 60_000, "the end of the request that traps its timeout");
        assertEquals(trapped, [500, "57014"]); // PostgREST answers class 57 with 500
        let next = await call("arm");
        if (!Deno.env.get("DATABASE_URL") && next[0] === 503) {
          // PGlite: a call the stuck engine held fails with 57P01 when that engine is given up.
          assertEquals(next, [503, "57P01"]);
          next = await call("arm");
        }
        assertEquals(next, [200, undefined]);
      },
    );
  } finally {
    await p.close();
  }
});
