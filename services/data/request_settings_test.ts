import { assertEquals } from "../../tests/assert.ts";
import type { FunctionInfo } from "../../db/rest/schema.ts";
import {
  appSettingNameValid,
  callGucs,
  durationMs,
  hoistedSettingProblem,
  isolationOf,
  roleGucs,
  roleSettingProblem,
} from "./request_settings.ts";

Deno.test("durationMs reads PostgreSQL durations, nothing else", () => {
  const cases: [string, number | null][] = [
    ["250", 250],
    ["1.5s", 1500],
    ["2 min", 120_000],
    ["1h", 3_600_000],
    ["500us", 0.5],
    ["1d", 86_400_000],
    ["0", 0],
    ["soon", null],
    ["-1s", null],
    ["1s; drop table x", null],
    ["", null],
  ];
  for (const [text, ms] of cases) assertEquals(durationMs(text), ms, text);
});

Deno.test("isolationOf names the levels begin takes", () => {
  const cases: [string, string | undefined][] = [
    ["serializable", "serializable"],
    ["Repeatable  Read", "repeatable read"],
    ["read uncommitted", "read committed"],
    ["read committed", "read committed"],
    ["chaos", undefined],
  ];
  for (const [text, level] of cases) assertEquals(isolationOf(text), level, text);
});

Deno.test("role settings: only the allowed names, each with a valid value", () => {
  const cases: [string, string, boolean][] = [
    ["statement_timeout", "3s", true],
    ["lock_timeout", "100", true],
    ["idle_in_transaction_session_timeout", "1min", true],
    ["default_transaction_isolation", "serializable", true],
    ["plan_filter.statement_cost_limit", "100000.5", true],
    ["plan_filter.statement_cost_limit", "-1", false],
    ["statement_timeout", "forever", false],
    ["role", "service_role", false],
    ["session_authorization", "postgres", false],
    ["search_path", "evil", false],
    ["row_security", "off", false],
    ["__proto__", "x", false],
    ["toString", "x", false],
  ];
  for (const [name, value, ok] of cases) assertEquals(roleSettingProblem(name, value) === null, ok, name);
  const names: [string, boolean][] = [
    ["jwt_secret", true],
    ["_x1", true],
    ["1x", false],
    ["a.b", false],
    ["a-b", false],
    ["", false],
    ["n".repeat(64), false],
  ];
  for (const [name, ok] of names) assertEquals(appSettingNameValid(name), ok, name);
});

Deno.test("roleGucs and callGucs: the project's over the catalog's, the function's over both, the platform's cap", () => {
  const base = roleGucs({
    platformMs: 8000,
    catalog: { statement_timeout: "5s", lock_timeout: "4s", default_transaction_isolation: "serializable" },
    project: { lock_timeout: "2s" },
    app: { name: "x" },
  });
  assertEquals(base, {
    timeoutMs: 5000,
    isolation: "serializable",
    settings: [["lock_timeout", "2s"], ["app.settings.name", "x"]],
  });
  assertEquals(roleGucs({ platformMs: 8000, project: { statement_timeout: "1h" } }).timeoutMs, 8000);
  // Stored settings that were never valid (written around the API) are dropped.
  assertEquals(
    roleGucs({ platformMs: 8000, project: { role: "postgres", lock_timeout: "1s" }, app: { "a.b": "x" } }),
    { timeoutMs: 8000, settings: [["lock_timeout", "1s"]] },
  );
  assertEquals(roleGucs({ platformMs: 8000, project: { statement_timeout: "0" } }).timeoutMs, 8000);
  const fn = (settings?: [string, string][]): FunctionInfo => ({
    name: "f",
    params: [],
    result: { kind: "void", set: false, type: "void", udt: "void", columns: [], table: null },
    volatility: "v",
    settings,
  });
  assertEquals(callGucs(base, fn(), 8000), base);
  assertEquals(
    callGucs(
      base,
      fn([["statement_timeout", "7s"], ["default_transaction_isolation", "read committed"]]),
      8000,
    ),
    { timeoutMs: 7000, isolation: "read committed", settings: base.settings },
  );
  assertEquals(
    callGucs(base, fn([["plan_filter.statement_cost_limit", "10"]]), 8000).settings,
    [["plan_filter.statement_cost_limit", "10"], ["lock_timeout", "2s"], ["app.settings.name", "x"]],
  );
  // PostgREST's default hoists three settings; the function's other settings stay its own.
  assertEquals(callGucs(base, fn([["work_mem", "1MB"]]), 8000), base);
  // A project's hoisted_tx_settings: only those; the isolation level applies whether hoisted or not.
  const only = new Set(["work_mem"]);
  assertEquals(
    callGucs(
      base,
      fn([["statement_timeout", "7s"], ["work_mem", "1MB"], [
        "default_transaction_isolation",
        "repeatable read",
      ]]),
      8000,
      only,
    ),
    { timeoutMs: 5000, isolation: "repeatable read", settings: [["work_mem", "1MB"], ...base.settings] },
  );
  assertEquals(callGucs(base, fn([["statement_timeout", "7s"]]), 8000, new Set()), base);
  // Names the platform sets itself never reach the transaction, even if stored around the API.
  assertEquals(callGucs(base, fn([["role", "postgres"]]), 8000, new Set(["role"])), base);
});

Deno.test("hoistedSettingProblem: a setting name, none the platform sets itself", () => {
  const names: [string, boolean][] = [
    ["statement_timeout", true],
    ["plan_filter.statement_cost_limit", true],
    ["Work_Mem", true],
    ["a.b.c", true],
    ["x$1", true],
    ["", false],
    ["a b", false],
    ["a;b", false],
    ["1a", false],
    ["a..b", false],
    ["a.", false],
    [".a", false],
    ["a".repeat(64), false],
    ["role", false],
    ["Session_Authorization", false],
    ["request.jwt.claims", false],
    ["response.headers", false],
    ["transaction_read_only", false],
    ["TRANSACTION_ISOLATION", false],
    ["transaction_deferrable", false],
    ["default_transaction_read_only", true],
  ];
  for (const [name, ok] of names) assertEquals(hoistedSettingProblem(name) === null, ok, name);
});
