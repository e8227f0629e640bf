/*
 * sim.h — the simulated device (sim.c): its constructor, which the
 * registry calls. p->capacity_bytes is its whole memory (required);
 * p->link_Bps caps its copies; it computes with the cpu kernels
 * (p->pool, p->sizes); p->test injects faults and delays.
 */
#ifndef SW_BACKEND_SIM_SIM_H
#define SW_BACKEND_SIM_SIM_H

#include "backend/backend.h"
#include "backend/backend_params.h"

sw_status backend_sim_create(const backend_params *p, backend **out);

#endif
