-- A column's (or domain's) default as SQL text whose names resolve as the project's own sessions resolve them
-- (their search_path is "$user", public, extensions): pg_get_expr qualifies a name that this path would not
-- find as the catalog's object. The data API evaluates these defaults for `Prefer: missing=default` in the
-- project's sessions, where they must name the objects the catalog's default names, whatever search_path read
-- them (the platform's own is extensions, pg_catalog).
create or replace function platform.qualified_default(expr pg_catalog.pg_node_tree, rel pg_catalog.oid)
returns text
language sql stable
set search_path = public, extensions
as $$ select pg_catalog.pg_get_expr(expr, rel) $$;
