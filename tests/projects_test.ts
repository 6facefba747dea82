import { assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, type Json, json, startPlatform } from "./harness.ts";

Deno.test("projects, keys, isolation and roles", async (t) => {
  const p = await startPlatform();
  try {
    const admin = await p.adminToken();
    const asAdmin = { authorization: `Bearer ${admin}` };
    let demo: Json;

    await t.step("admin creates a project with its own database and keys", async () => {
      const { status, body } = await json(
        await p.fetch("/v1/admin/projects", {
          method: "POST",
          headers: asAdmin,
          json: { ref: "demo", name: "Demo" },
        }),
      );
      assertEquals(status, 201);
      demo = body.data;
      assertEquals(demo.ref, "demo");
      assertMatch(demo.public_key, /^pk_demo_[0-9a-f]{32}$/);
      assertMatch(demo.secret_key, /^sk_demo_[0-9a-f]{32}$/);
      assertEquals(demo.api_url, "http://demo.localhost");
    });

    await t.step("a taken ref is 409, a malformed ref 400", async () => {
      const taken = await p.fetch("/v1/admin/projects", {
        method: "POST",
        headers: asAdmin,
        json: { ref: "demo" },
      });
      assertEquals([taken.status, (await taken.json()).error.code], [409, "CONFLICT"]);
      for (const ref of ["Demo", "-x", "a_b", "x".repeat(41), "a.b"]) {
        const bad = await p.fetch("/v1/admin/projects", { method: "POST", headers: asAdmin, json: { ref } });
        assertEquals([bad.status, (await bad.json()).error.code], [400, "VALIDATION_ERROR"], ref);
      }
    });

    await t.step("admin lists and reads projects", async () => {
      const list = await json(await p.fetch("/v1/admin/projects", { headers: asAdmin }));
      assertEquals(list.body.data.map((x: Json) => x.ref), ["default", "demo"]);
      const one = await json(await p.fetch("/v1/admin/projects/demo", { headers: asAdmin }));
      assertEquals(one.body.data.secret_key, demo.secret_key);
      const missing = await json(await p.fetch("/v1/admin/projects/nope", { headers: asAdmin }));
      assertEquals([missing.status, missing.body.error.code], [404, "PROJECT_NOT_FOUND"]);
    });

    await t.step("the host selects the project", async () => {
      const cases: [string, string, string][] = [
        ["http://demo.localhost/v1/project", demo.public_key, "demo"],
        ["http://DEMO.localhost:8000/v1/project", demo.public_key, "demo"],
        ["http://localhost/v1/project", p.publicKey, "default"],
        ["http://127.0.0.1:9999/v1/project", p.publicKey, "default"],
        ["http://[::1]:9999/v1/project", p.publicKey, "default"],
      ];
      for (const [url, key, ref] of cases) {
        const { status, body } = await json(await p.fetch(url, { headers: { apikey: key } }));
        assertEquals([status, body.data?.ref], [200, ref], url);
      }
    });

    await t.step(
      "an unknown project or a host outside the base domain is 404 PROJECT_NOT_FOUND",
      async () => {
        for (const url of ["http://ghost.localhost/v1/project", "http://example.com/v1/project"]) {
          const { status, body } = await json(await p.fetch(url, { headers: { apikey: p.publicKey } }));
          assertEquals([status, body.error.code], [404, "PROJECT_NOT_FOUND"], url);
        }
      },
    );

    await t.step("a key of project A gets 401 on project B, both ways", async () => {
      const pairs: [string, string][] = [
        ["http://demo.localhost/v1/project", p.publicKey],
        ["http://demo.localhost/v1/project", p.secretKey],
        ["http://localhost/v1/project", demo.public_key],
        ["http://localhost/v1/project", demo.secret_key],
      ];
      for (const [url, key] of pairs) {
        for (
          const headers of [{ apikey: key }, { authorization: `Bearer ${key}` }] as Record<string, string>[]
        ) {
          const { status, body } = await json(await p.fetch(url, { headers }));
          assertEquals([status, body.error.code], [401, "UNAUTHORIZED"], `${url} ${key.slice(0, 8)}`);
        }
      }
    });

    await t.step("a user token of project A gets 401 on project B", async () => {
      const su = await json(
        await p.fetch("http://demo.localhost/v1/auth/signup", {
          method: "POST",
          headers: { apikey: demo.public_key },
          json: { email: "dora@example.com", password: "password-demo" },
        }),
      );
      assertEquals(su.status, 200);
      const token = su.body.data.session.access_token;
      const other = await json(
        await p.fetch("/v1/project", { headers: { authorization: `Bearer ${token}` } }),
      );
      assertEquals([other.status, other.body.error.code], [401, "INVALID_TOKEN"]);
      const own = await json(
        await p.fetch("http://demo.localhost/v1/project", { headers: { authorization: `Bearer ${token}` } }),
      );
      assertEquals(own.body.data.role, "authenticated");
    });

    await t.step("project B's data is never visible through project A", async () => {
      const sql = (host: string, key: string, query: string) =>
        p.fetch(`http://${host}/v1/sql`, { method: "POST", headers: { apikey: key }, json: { query } }).then(
          json,
        );
      const made = await sql(
        "demo.localhost",
        demo.secret_key,
        "create table secrets (v text); insert into secrets values ('demo-only'); select * from secrets",
      );
      assertEquals(made.body.data, [{ v: "demo-only" }]);
      const fromA = await sql("localhost", p.secretKey, "select * from secrets");
      assertEquals([fromA.status, fromA.body.error.code], [400, "42P01"]);
      // Users are per project too: the demo user does not exist in the default project.
      const users = await sql("localhost", p.secretKey, "select email from auth.users");
      assertEquals(users.body.data, []);
      const signIn = await json(
        await p.fetch("/v1/auth/token", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { grant_type: "password", email: "dora@example.com", password: "password-demo" },
        }),
      );
      assertEquals(signIn.status, 401);
    });

    // Every role against an admin-only route and a service_role-only route.
    const userToken = (await json(
      await p.fetch("/v1/auth/signup", {
        method: "POST",
        headers: { apikey: p.publicKey },
        json: { email: "roles@example.com", password: "password-roles" },
      }),
    )).body.data.session.access_token;
    const roles: [string, Record<string, string>, number, number][] = [
      // role, headers, admin-only status, service_role-only status
      ["no credentials", {}, 401, 401],
      ["anon", { apikey: p.publicKey }, 403, 403],
      ["authenticated", { apikey: p.publicKey, authorization: `Bearer ${userToken}` }, 403, 403],
      ["service_role (apikey)", { apikey: p.secretKey }, 403, 200],
      ["service_role (bearer)", { authorization: `Bearer ${p.secretKey}` }, 403, 200],
      ["admin (console session)", asAdmin, 200, 200],
      ["admin (console cookie)", { cookie: `console_session=${admin}` }, 200, 200],
      ["invalid console session", { authorization: "Bearer cs_forged" }, 401, 401],
    ];
    for (const [role, headers, adminStatus, serviceStatus] of roles) {
      await t.step(
        `role ${role}: admin-only ${adminStatus}, service_role-only ${serviceStatus}`,
        async () => {
          const a = await json(await p.fetch("/v1/admin/projects", { headers }));
          assertEquals(a.status, adminStatus);
          const s = await json(
            await p.fetch("/v1/sql", { method: "POST", headers, json: { query: "select 1 as one" } }),
          );
          assertEquals(s.status, serviceStatus);
          for (const r of [a, s]) {
            if (r.status === 403) {
              assertEquals(r.body.error.code, "FORBIDDEN");
              assertEquals(r.body.error.type, "forbidden");
              assertMatch(r.body.error.message, /reserved to (admin|service_role)/);
            }
            if (r.status === 401) assertEquals(r.body.error.type, "unauthorized");
          }
        },
      );
    }

    await t.step("POST /v1/sql runs as the project owner: no superuser, no platform internals", async () => {
      const sql = (query: string) =>
        p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } }).then(json);
      const who = await sql(
        "select current_user as name, (select rolsuper from pg_roles where rolname = current_user) as su",
      );
      assertEquals(who.body.data[0].su, false);
      assertMatch(who.body.data[0].name, /owner$/);
      const refused = [
        "alter role anon bypassrls",
        "copy (select 1) to program 'id'",
        "select * from platform.migrations",
        "create table platform.sneaky (id int)",
        "select pg_read_file('/etc/passwd')",
      ];
      for (const query of refused) {
        const res = await sql(query);
        assertEquals([res.status, res.body.error.code], [400, "42501"], query);
      }
      // The owner's tables are the data API's: anon, authenticated and service_role get their privileges.
      await sql("create table owned (id int primary key, v text); insert into owned values (1, 'x')");
      const read = await json(await p.fetch("/v1/db/owned?select=v", { headers: { apikey: p.publicKey } }));
      assertEquals(read.body.data, [{ v: "x" }]);
      if (p.platform.dbs.kind === "postgres") {
        // A separate login: taking back a role leaves the owner an owner.
        const reset = await sql("reset role; select rolsuper from pg_roles where rolname = current_user");
        assertEquals(reset.body.data, [{ rolsuper: false }]);
      }
    });

    await t.step("rotating a key: the old one stops working at once, the new one works", async () => {
      const { body } = await json(
        await p.fetch("/v1/admin/projects/demo/keys/rotate", {
          method: "POST",
          headers: asAdmin,
          json: { kind: "public" },
        }),
      );
      const fresh = body.data.public_key;
      assertMatch(fresh, /^pk_demo_/);
      assertEquals(body.data.secret_key, demo.secret_key);
      const old = await p.fetch("http://demo.localhost/v1/project", { headers: { apikey: demo.public_key } });
      assertEquals(old.status, 401);
      await old.body?.cancel();
      const now = await json(
        await p.fetch("http://demo.localhost/v1/project", { headers: { apikey: fresh } }),
      );
      assertEquals(now.body.data.role, "anon");
    });

    await t.step("the default project cannot be deleted", async () => {
      const res = await json(
        await p.fetch("/v1/admin/projects/default", { method: "DELETE", headers: asAdmin }),
      );
      assertEquals([res.status, res.body.error.code], [409, "CONFLICT"]);
    });

    await t.step("deleting a project removes it, its keys and its database", async () => {
      const res = await json(
        await p.fetch("/v1/admin/projects/demo", { method: "DELETE", headers: asAdmin }),
      );
      assertEquals(res.body, { data: null, meta: null });
      const gone = await json(
        await p.fetch("http://demo.localhost/v1/project", { headers: { apikey: demo.secret_key } }),
      );
      assertEquals([gone.status, gone.body.error.code], [404, "PROJECT_NOT_FOUND"]);
      // Re-creating the ref starts from an empty database.
      const again = await json(
        await p.fetch("/v1/admin/projects", { method: "POST", headers: asAdmin, json: { ref: "demo" } }),
      );
      const q = await json(
        await p.fetch("http://demo.localhost/v1/sql", {
          method: "POST",
          headers: { apikey: again.body.data.secret_key },
          json: { query: "select count(*)::int as n from auth.users" },
        }),
      );
      assertEquals(q.body.data, [{ n: 0 }]);
    });

    await t.step("admin login: wrong password 401; logout ends the session", async () => {
      const wrong = await p.fetch("/v1/admin/login", {
        method: "POST",
        json: { ...ADMIN, password: "nope-nope" },
      });
      assertEquals(wrong.status, 401);
      await wrong.body?.cancel();
      const login = await json(await p.fetch("/v1/admin/login", { method: "POST", json: ADMIN }));
      const token = login.body.data.token;
      assertMatch(token, /^cs_/);
      const out = await p.fetch("/v1/admin/logout", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      assertEquals(out.status, 200);
      await out.body?.cancel();
      const after = await p.fetch("/v1/admin/projects", { headers: { authorization: `Bearer ${token}` } });
      assertEquals(after.status, 401);
      await after.body?.cancel();
    });
  } finally {
    await p.close();
  }
});
