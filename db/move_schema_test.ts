import { assertEquals } from "../tests/assert.ts";
import { rewriteDump } from "./move_schema.ts";

Deno.test("rewriteDump: roles renamed where pg_dump names a role, public not created again, newer settings dropped", () => {
  const dump = [
    "\\restrict abc",
    "SET transaction_timeout = 0;",
    "SET lock_timeout = 0;",
    "CREATE SCHEMA public;",
    "COMMENT ON SCHEMA public IS 'standard public schema';",
    "CREATE SCHEMA crm;",
    "ALTER SCHEMA crm OWNER TO project_owner;",
    "CREATE TABLE public.project_owner (project_owner text);",
    "ALTER TABLE public.project_owner OWNER TO project_owner;",
    "GRANT SELECT ON TABLE public.project_owner TO anon, project_owner;",
    "ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON TABLES TO anon;",
    "\\unrestrict abc",
  ].join("\n");
  assertEquals(rewriteDump(dump, { project_owner: "app_demo_owner", postgres: "admin" }).split("\n"), [
    "SET lock_timeout = 0;",
    "CREATE SCHEMA crm;",
    'ALTER SCHEMA crm OWNER TO "app_demo_owner";',
    "CREATE TABLE public.project_owner (project_owner text);",
    'ALTER TABLE public.project_owner OWNER TO "app_demo_owner";',
    'GRANT SELECT ON TABLE public.project_owner TO anon, "app_demo_owner";',
    'ALTER DEFAULT PRIVILEGES FOR ROLE "admin" IN SCHEMA public GRANT ALL ON TABLES TO anon;',
  ]);
});
