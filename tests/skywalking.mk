# SPDX-License-Identifier: GPL-2.0
# SkyWalking OAP tests: the gRPC wire probe, a protobuf-c decoder for our
# nanopb output (an independent protobuf implementation), hand-made profiles
# through the message encoder, a stripped oap_burn, and an OAP that
# misbehaves at the HTTP/2 level (fault_oap, on nghttp2's server API).
SW_PROTOS := common/Common.proto common/Command.proto ebpf/profiling/Profile.proto \
	     ebpf/profiling/Process.proto
SW_PBC    := $(patsubst %.proto,$(B)/pbc/%.pb-c.c,$(SW_PROTOS))

all: $(B)/grpc_probe $(B)/swdecode $(B)/sw_messages $(B)/oap_burn_nosym $(B)/fault_oap

$(B)/grpc_probe: agent/grpc_probe.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)

$(SW_PBC): $(addprefix ../proto/,$(SW_PROTOS)) | $(B)
	@mkdir -p $(B)/pbc
	protoc-c -I../proto --c_out=$(B)/pbc $(SW_PROTOS)

$(B)/swdecode: agent/swdecode.c $(SW_PBC) | $(B)
	$(CC) -O1 -g -Wall -I$(B)/pbc -o $@ agent/swdecode.c $(SW_PBC) -lprotobuf-c

$(B)/fault_oap: agent/fault_oap.c $(SW_PBC) | $(B)
	$(CC) -O1 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-Wno-missing-field-initializers \
		-I$(B)/pbc -o $@ agent/fault_oap.c $(SW_PBC) -lprotobuf-c -lnghttp2

$(B)/sw_messages: agent/sw_messages.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)

# No symbol of its own (a stripped PIE): support_ebpf_profiling=false, and
# its frames unresolved.  $(B)/oap_burn keeps the symbols to compare with.
$(B)/oap_burn_nosym: $(B)/oap_burn
	strip --strip-all -o $@ $<
