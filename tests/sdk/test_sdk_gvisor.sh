#!/bin/bash
# The official JS SDK suite (test_sdk.sh) against a server whose sandboxes run
# under gVisor ([runtime] type = "gvisor"), same tests, same image.
OSB_SDK_RUNTIME=gvisor exec bash "$(dirname "$0")/test_sdk.sh" "$@"
