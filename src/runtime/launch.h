/*
 * launch.h — plan and load in one call, with the one re-plan loop of the
 * project (sw_engine_launch in spillway.h). Above the engine: it plans
 * (src/plan), creates (src/engine), and when the device refuses memory the
 * plan counted on, plans again with what the device really gave.
 */
#ifndef SW_RUNTIME_LAUNCH_H
#define SW_RUNTIME_LAUNCH_H

#include "engine/engine.h"

/* sw_engine_launch with test hooks for the first attempt (NULL: none). */
sw_status runtime_launch(const sw_model *model, const sw_plan_options *plan_opt,
                         const sw_engine_options *opt, const engine_hooks *hooks,
                         sw_engine **out);

#endif
