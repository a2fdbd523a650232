/* search.c — placeholder while the fragment searches are written. */
#include "planner/search.h"

void search_opts_default(search_opts *o)
{
    o->layers = 0;
    o->batch = 0;
    o->mem_budget = 0;
    o->exhaustive = 0;
}

int search_cli(const plan_ctx *ctx, const char *algo, const search_opts *o, int json, sim_err *err)
{
    (void)ctx;
    (void)o;
    (void)json;
    return sim_errf(err, "--search %s: not built yet", algo);
}
