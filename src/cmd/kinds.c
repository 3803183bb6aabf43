/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/kinds: the pipeline, the relay and the reconciler as struct
 * cmd_engine_kind (engine.h): one adapter each around x_new, x_run and
 * x_destroy, so that a command runs any of them the same way.
 */
#include "cmd/engine.h"
#include "pipeline/pipeline.h"
#include "reconcile/reconcile.h"
#include "relay/relay.h"

static void *pipeline_make(const void *o, char *errstr, size_t errstr_size)
{
        return pipeline_new(o, errstr, errstr_size);
}

static int pipeline_run_(void *e, const atomic_int *stop)
{
        return pipeline_run(e, stop);
}

static void pipeline_destroy_(void *e)
{
        pipeline_destroy(e);
}

static void *relay_make(const void *o, char *errstr, size_t errstr_size)
{
        return relay_new(o, errstr, errstr_size);
}

static int relay_run_(void *e, const atomic_int *stop)
{
        return relay_run(e, stop);
}

static void relay_destroy_(void *e)
{
        relay_destroy(e);
}

static void *reconcile_make(const void *o, char *errstr, size_t errstr_size)
{
        return reconcile_new(o, errstr, errstr_size);
}

static int reconcile_run_(void *e, const atomic_int *stop)
{
        return reconcile_run(e, stop);
}

static void reconcile_destroy_(void *e)
{
        reconcile_destroy(e);
}

const struct cmd_engine_kind cmd_pipeline_kind  = { "consume", NULL,
                                                    pipeline_make, pipeline_run_,
                                                    pipeline_destroy_ };
const struct cmd_engine_kind cmd_relay_kind     = { "relay", NULL, relay_make,
                                                    relay_run_, relay_destroy_ };
const struct cmd_engine_kind cmd_reconcile_kind = {
        "reconcile", NULL, reconcile_make, reconcile_run_, reconcile_destroy_
};
