# Issue 39, section 4: serve behind a Kubernetes inference gateway.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# /metrics through the Prometheus project's Python parser (prometheus_client,
# installed by scripts/test.sh into ~/.cache/spillway/test-pydeps; skipped
# without it): every series the endpoint picker reads (vllm:* queue, running,
# KV use, cache layout, LoRA info) with its type, help, labels and range,
# idle, while requests run and queue on a throttled simulated device, and
# after; --public-metrics opens /metrics alone (sanitizers too).
add_test(NAME gateway_metrics
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gateway_test.py metrics
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(gateway_metrics PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# SIGTERM with --drain-timeout while a request streams: it completes, new
# requests get 503, /health says "draining", exit 0; a shorter drain cuts
# the request ("cancelled") at its bound, exit 0 (sanitizers too).
add_test(NAME serve_drain
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/gateway_test.py drain
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(serve_drain PROPERTIES TIMEOUT 120)
# deploy/kubernetes/ validated offline: Deployment and Service against
# kubernetes-validate's bundled Kubernetes schemas (strict), InferencePool,
# InferenceObjective and HTTPRoute against subsets of their CRDs' schemas
# written into the test, the files against each other, and the container's
# args run by serve on the tiny model (skipped without the packages; the
# test's docstring says what is not validated).
add_test(NAME k8s_manifests
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/k8s_manifests_test.py
                 ${CMAKE_SOURCE_DIR}/deploy/kubernetes $<TARGET_FILE:spillway_cli>
                 ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(k8s_manifests PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
# Issue 39, section 2: serve --replicas 2 (two engines, each its own
# simulated device) under concurrent streamed and whole requests: none
# lost, both replicas used, greedy answers equal across them, per-replica
# /metrics adding up to the totals, exit 0 on SIGTERM; bad --replicas
# refused (sanitizers too).
add_test(NAME serve_replicas
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/serve_replicas_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(serve_replicas PROPERTIES TIMEOUT 300)
