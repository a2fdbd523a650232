/* test_roles.c — what the schedule and the machine say about themselves, so
 * that the planner need not match names (issue 14): a generated schedule's
 * stream roles and rank layout (checked against its own communicators),
 * the communicator's "whole" ring, all three through JSON and back, bad
 * values refused with the field named; the machine's fabric kind from a
 * cluster file and from its SimGrid XML alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workloads/wl_test.h"
#include "platforms/platform.h"
#include "sim/schedule.h"

/* Every stream has the role its generator gave it; the layout's formula
 * puts the members of every "tp.pP.dD" / "dp.pP.tT" communicator where
 * their names say. */
static void test_generated(void)
{
    wl_model m = {0};
    snprintf(m.name, sizeof m.name, "roles");
    m.layers = 4, m.hidden = 256, m.heads = 4, m.ffn = 1024, m.seq = 128, m.vocab = 1024;
    sim_machine *mach = wl_test_gpu_machine("H100-SXM", 8);
    sim_schedule *s = wl_test_generate(&m, "tp=2,pp=2,dp=2,mb=1,gb=8", mach);
    CHECK(s->layout.tp == 2 && s->layout.cp == 1 && s->layout.dp == 2 && s->layout.pp == 2 && s->layout.ep == 1);
    static const struct {
        const char *name;
        sim_role role;
    } want[] = {{"compute", SIM_ROLE_COMPUTE}, {"tp", SIM_ROLE_TP}, {"dp", SIM_ROLE_DP},
                {"pp-send-next", SIM_ROLE_PP}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int st = wl_test_stream(s, 0, want[k].name);
        CHECK(st >= 0 && s->streams[st].role == want[k].role);
    }
    for (uint32_t i = 0; i < s->nstreams; i++)
        CHECK(s->streams[i].role != SIM_ROLE_NONE);
    const sim_layout *L = &s->layout;
    int checked = 0;
    for (int c = 0; c < s->ncomms; c++) {
        const sim_comm *cm = &s->comms[c];
        int p, d, t;
        const char *nm = sim_sched_strname(s, cm->name);
        if (sscanf(nm, "tp.p%d.d%d", &p, &d) == 2)
            for (int i = 0; i < cm->nranks; i++, checked++)
                CHECK(cm->ranks[i] == ((p * L->dp + d) * L->cp) * L->tp + i);
        if (sscanf(nm, "dp.p%d.t%d", &p, &t) == 2)
            for (int i = 0; i < cm->nranks; i++, checked++)
                CHECK(cm->ranks[i] == ((p * L->dp + i) * L->cp) * L->tp + t);
    }
    CHECK(checked == 16);

    /* through JSON and back: roles, layout and a communicator's whole ring */
    s->comms[0].whole_ranks = 16;
    s->comms[0].whole_nodes = 4;
    char *text = sim_sched_to_json(s, 0);
    CHECK_HAS(text, "\"role\":\"dp\"");
    CHECK_HAS(text, "\"layout\":{\"tp\":2,\"cp\":1,\"dp\":2,\"pp\":2,\"ep\":1}");
    CHECK_HAS(text, "\"whole\":{\"ranks\":16,\"nodes\":4}");
    sim_err err;
    sim_schedule *b = sim_sched_read_json(text, "t.json", &err);
    CHECK(b != NULL);
    if (b) {
        char *again = sim_sched_to_json(b, 0);
        CHECK_STR(again, text);
        free(again);
        CHECK(b->comms[0].whole_ranks == 16 && b->comms[0].whole_nodes == 4);
        CHECK(b->streams[wl_test_stream(b, 3, "dp")].role == SIM_ROLE_DP);
        sim_sched_free(b);
    }
    /* bad values name the field */
    static const struct {
        const char *from, *to, *msg;
    } bad[] = {{"\"role\":\"dp\"", "\"role\":\"dq\"", ".role: expected \"compute\""},
               {"\"layout\":{\"tp\":2", "\"layout\":{\"tp\":3", "layout: tp x cp x dp x pp = 12"},
               {"\"layout\":{\"tp\":2", "\"layout\":{\"tq\":2", "layout"},
               {"\"whole\":{\"ranks\":16", "\"whole\":{\"ranks\":1", "communicators[0].whole.ranks: expected an integer in 2.."}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *t = malloc(strlen(text) + 64), *at = strstr(text, bad[k].from);
        CHECK(at != NULL);
        if (!at) {
            free(t);
            continue;
        }
        sprintf(t, "%.*s%s%s", (int)(at - text), text, bad[k].to, at + strlen(bad[k].from));
        err.msg[0] = 0;
        sim_schedule *x = sim_sched_read_json(t, "t.json", &err);
        CHECK(x == NULL);
        CHECK_HAS(err.msg, bad[k].msg);
        sim_sched_free(x);
        free(t);
    }
    free(text);
    sim_sched_free(s);
    sim_machine_free(mach);
}

/* The fabric kind as the platform is built, and as its XML loads back. */
static void test_fabric(void)
{
    static const struct {
        const char *cluster;
        sim_fabric fabric;
    } want[] = {{"rtx3090-16x4", SIM_FABRIC_SWITCH}, {"dgx-h100-16n", SIM_FABRIC_FAT_TREE}};
    sim_err err;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        sim_machine *m = plat_load(want[k].cluster, &err);
        CHECK(m != NULL);
        if (!m)
            continue;
        CHECK(m->fabric == want[k].fabric);
        sim_machine *x = plat_from_xml_text(m->platform_xml, "x.xml", &err);
        CHECK(x && x->fabric == want[k].fabric);
        sim_machine_free(x);
        sim_machine_free(m);
    }
    /* a hand-written platform: no fabric trainsim knows */
    const char *xml = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                      "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
                      "<host id=\"g0\" speed=\"1Gf\"><prop id=\"trainsim:gpu\" value=\"RTX3090\"/></host>"
                      "</zone></platform>\n";
    sim_machine *h = plat_from_xml_text(xml, "hand.xml", &err);
    CHECK(h && h->fabric == SIM_FABRIC_UNKNOWN);
    if (!h)
        fprintf(stderr, "%s\n", err.msg);
    sim_machine_free(h);
}

int main(void)
{
    test_generated();
    test_fabric();
    if (wl_test_failures)
        fprintf(stderr, "%d failures\n", wl_test_failures);
    return wl_test_failures != 0;
}
