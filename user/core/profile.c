// SPDX-License-Identifier: GPL-2.0
/* Merging raw records into a symbolized profile. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "aperture.h"
#include "profile.h"
#include "util.h"

/* A tsearch node (the key pointer and two children) as the heap holds it: the tree hides them. */
#define TREE_NODE_BYTES 32

/*
 * What identifies a sample: the raw kernel key (stack ids are stable hashes).
 * The index is open addressing over sample numbers + 1 (0: an empty slot),
 * at most half full: 8-16 bytes a sample where a tree took a node and a key
 * copy (96); a fork storm's syscalls are tens of thousands of samples a minute.
 */
struct sample_id {
	uint32_t tgid;
	uint32_t pid;
	uint64_t user_stack_id;
	uint64_t kernel_stack_id;
	uint64_t object;
	char comm[16];
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t key_hash(const struct sample_id *k)
{
	uint64_t h = mix(0, ((uint64_t)k->tgid << 32) | k->pid), c[2];

	memcpy(c, k->comm, sizeof(c));
	h = mix(h, k->user_stack_id);
	h = mix(h, k->kernel_stack_id);
	h = mix(h, k->object);
	h = mix(mix(h, c[0]), c[1]);
	return h ^ (h >> 29);
}

static bool key_matches(const struct profile_sample *s, const struct sample_id *k)
{
	return s->tgid == k->tgid && s->pid == k->pid && s->user_stack_id == k->user_stack_id &&
	       s->kernel_stack_id == k->kernel_stack_id && s->object == k->object &&
	       !memcmp(s->comm, k->comm, sizeof(s->comm));
}

/* The slot holding @k's sample, or the empty one where it would go. */
static uint32_t *index_slot(const struct profile *p, const struct sample_id *k)
{
	size_t mask = p->index_slots - 1, i = key_hash(k) & mask;

	while (p->index[i] && !key_matches(&p->samples[p->index[i] - 1], k))
		i = (i + 1) & mask;
	return &p->index[i];
}

/* Twice the slots, every sample placed again; 0 or -ENOMEM (the old index kept). */
static int index_grow(struct profile *p)
{
	size_t nslots = p->index_slots ? p->index_slots * 2 : 1024;
	uint32_t *old = p->index, *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	p->bytes -= heap_bytes(old);
	p->index = slots;
	p->index_slots = nslots;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		struct sample_id k = { .tgid = s->tgid, .pid = s->pid, .user_stack_id = s->user_stack_id,
					.kernel_stack_id = s->kernel_stack_id, .object = s->object };

		memcpy(k.comm, s->comm, sizeof(k.comm));
		*index_slot(p, &k) = (uint32_t)i + 1;
	}
	free(old);
	p->bytes += heap_bytes(slots);
	return 0;
}

struct object_ref {
	uint32_t tgid;
	uint64_t object;
	char *name;		/* a copy of the first name this object got */
};

static void object_ref_free(void *ref)
{
	free(((struct object_ref *)ref)->name);
	free(ref);
}

static int object_cmp(const void *a, const void *b)
{
	const struct object_ref *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return (x->object > y->object) - (x->object < y->object);
}

void profile_init(struct profile *p, const char *kind, const char *title, struct symbolizer *sym)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->title = title;
	p->sym = sym;
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		free(p->samples[i].frames);
		free(p->samples[i].object_name);
	}
	free(p->samples);
	free(p->index);
	tdestroy(p->object_names, object_ref_free);
	p->object_names = NULL;
	p->samples = NULL;
	p->index = NULL;
	p->index_slots = 0;
	p->nsamples = p->cap = 0;
	p->bytes = p->samples_bytes = 0;
}

/*
 * The kernel stack of a tracepoint program starts inside the BPF machinery
 * (bpf_prog_<tag>_<name>, bpf_trace_runN): not the traced code, so dropped.
 */
static bool is_bpf_frame(const char *name)
{
	return strncmp(name, "bpf_prog_", 9) == 0 || strncmp(name, "bpf_trace_run", 13) == 0 ||
	       strncmp(name, "__bpf_trace_", 12) == 0 || strncmp(name, "__traceiter_", 12) == 0;
}

static void frame_lost(struct profile_frame *f, bool kernel)
{
	memset(f, 0, sizeof(*f));
	f->sym.name = kernel ? "[kernel-stack-lost]" : "[user-stack-lost]";
	f->kernel = kernel;
}

/*
 * The namer also gets the name another sample of the same object got (maybe
 * while its process lived, when more could be read than now).
 */
static char *object_name(struct profile *p, const struct profile_sample *s, const uint64_t *raw)
{
	struct object_ref probe = { .tgid = s->tgid, .object = s->object }, **found, *ref;
	char *name;

	if (!p->object_name || !s->object)
		return NULL;
	found = tfind(&probe, &p->object_names, object_cmp);
	name = p->object_name(p, s, raw, found ? (*found)->name : NULL);
	if (found || !name || !(ref = malloc(sizeof(*ref))))
		return name;
	*ref = probe;
	ref->name = strdup(name);
	if (!ref->name || !tsearch(ref, &p->object_names, object_cmp))
		object_ref_free(ref);	/* only the reuse is lost */
	else
		p->bytes += heap_bytes(ref) + heap_bytes(ref->name) + TREE_NODE_BYTES;
	return name;
}

/*
 * Fills frames[0], kept free for the object's name, once the kernel frames
 * are there (a namer may name a lock by the code that contends for it);
 * without a name the frames move up into it.  True when named.
 */
static bool sample_name_object(struct profile *p, struct profile_sample *s, const uint64_t *raw)
{
	s->object_name = object_name(p, s, raw);
	if (s->object_name) {
		s->frames[0].sym.name = s->frames[0].sym.function = s->object_name;
		s->frames[0].sym.addr = s->object;	/* exporters tell locations apart by address */
		return true;
	}
	memmove(&s->frames[0], &s->frames[1], (s->nkernel - 1) * sizeof(*s->frames));
	memset(&s->frames[s->nkernel - 1], 0, sizeof(*s->frames));
	s->nkernel--;
	return false;
}

/*
 * The kernel frames from frames[*k] on, less the BPF machinery at their top
 * (is_bpf_frame); *k moves past them.
 */
static void kernel_frames(struct profile *p, struct profile_sample *s, const uint64_t *kernel_ips, uint32_t *k)
{
	uint32_t n = s->nkernel < APERTURE_MAX_DEPTH ? s->nkernel : APERTURE_MAX_DEPTH, first = *k;
	struct sym_frame names[APERTURE_MAX_DEPTH];
	uint64_t addrs[APERTURE_MAX_DEPTH];

	if (!n)
		return;
	for (uint32_t i = 0; i < n; i++)
		addrs[i] = symbolizer_lookup_addr(kernel_ips[i], i);
	symbolizer_kernel_frames(p->sym, addrs, n, names);
	for (uint32_t i = 0; i < n; i++) {
		if (*k == first && is_bpf_frame(names[i].name))
			continue;
		s->frames[*k].sym = names[i];
		s->frames[(*k)++].kernel = true;
	}
}

/*
 * Frames, leaf first: the object's name (when the kind names objects), the
 * kernel frames, then the user frames.  The object frame counts in nkernel
 * (it is the leaf) but is not a kernel frame (f->kernel is false).
 */
static int sample_symbolize(struct profile *p, struct profile_sample *s,
			    const uint64_t *user_ips, const uint64_t *kernel_ips, const uint64_t *raw)
{
	bool user_lost = s->user_stack_id == APERTURE_STACK_LOST;
	bool kernel_lost = s->kernel_stack_id == APERTURE_STACK_LOST;
	bool named = p->object_name && s->object;
	uint32_t n, k = named;	/* after the object's slot: the namer reads the kernel frames */

	if (user_lost)
		s->nuser = 1;
	if (kernel_lost)
		s->nkernel = 1;
	n = s->nkernel + s->nuser + named;	/* the object's slot only for a kind that names one */
	s->frames = calloc(n ? n : 1, sizeof(*s->frames));
	if (!s->frames)
		return -ENOMEM;
	if (kernel_lost)
		frame_lost(&s->frames[k++], true);
	else
		kernel_frames(p, s, kernel_ips, &k);
	s->nkernel = k;
	if (named && !sample_name_object(p, s, raw))
		k = s->nkernel;
	if (user_lost)
		frame_lost(&s->frames[k++], false);
	for (uint32_t i = 0; i < s->nuser && !user_lost; i++)
		symbolizer_user(p->sym, s->tgid, symbolizer_lookup_addr(user_ips[i], i), &s->frames[k++].sym);
	return 0;
}

#define JIT_RETRY_NS 1000000000ull	/* the symbolizer re-reads a perf map at most once a second */

/* A user frame no symbol covers in anonymous memory: JIT code a later perf map may name. */
static bool frame_unnamed_jit(const struct profile_frame *f)
{
	return !f->sym.function && f->sym.mapping && !f->sym.mapping->kernel && f->sym.mapping->path &&
	       f->sym.mapping->path[0] == '[';
}

/* Whether @s has such frames; @now is kept as the last try when it does. */
static void sample_note_jit(struct profile_sample *s, uint64_t now)
{
	s->jit_tried_ns = 0;
	for (uint32_t i = s->nkernel; i < s->nkernel + s->nuser; i++)
		if (frame_unnamed_jit(&s->frames[i]))
			s->jit_tried_ns = now;
}

/*
 * A sample is named when first drained, and counts of the same stack are added to it after: JIT
 * code sampled before the JVM wrote it in its perf map (--jvm-perfmap asks on its own thread,
 * every few seconds) would stay unnamed for the whole run.  Its unnamed JIT frames are tried
 * again, at most once a second.
 */
static void sample_retry_jit(struct profile *p, struct profile_sample *s)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (now - s->jit_tried_ns < JIT_RETRY_NS)
		return;
	for (uint32_t i = s->nkernel; i < s->nkernel + s->nuser; i++)
		if (frame_unnamed_jit(&s->frames[i]))
			symbolizer_user(p->sym, s->tgid, s->frames[i].sym.addr, &s->frames[i].sym);
	sample_note_jit(s, now);
}

static struct profile_sample *sample_new(struct profile *p)
{
	if (p->nsamples == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct profile_sample *grown = realloc(p->samples, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		p->bytes -= p->samples_bytes;
		p->samples_bytes = heap_bytes(grown);
		p->bytes += p->samples_bytes;
		p->samples = grown;
		p->cap = cap;
	}
	memset(&p->samples[p->nsamples], 0, sizeof(p->samples[0]));
	return &p->samples[p->nsamples++];
}

static void sample_id_of(const struct profile_record *r, struct sample_id *key)
{
	*key = (struct sample_id){
		.tgid = r->tgid, .pid = r->pid, .object = r->object,
		.user_stack_id = r->user_stack_id, .kernel_stack_id = r->kernel_stack_id,
	};
	strncpy(key->comm, r->comm, sizeof(key->comm) - 1);
}

static void sample_add_values(struct profile *p, struct profile_sample *s, const struct profile_record *r)
{
	for (int i = 0; i < p->nvalues; i++)
		s->values[i] += r->values[i];
}

/* An existing sample's values: its JIT frames tried again first (sample_retry_jit). */
static void sample_add_again(struct profile *p, struct profile_sample *s, const struct profile_record *r)
{
	if (s->jit_tried_ns)
		sample_retry_jit(p, s);
	sample_add_values(p, s, r);
}

bool profile_add_known(struct profile *p, const struct profile_record *r)
{
	struct sample_id key;
	uint32_t *slot;

	if (!p->index_slots)
		return false;
	sample_id_of(r, &key);
	slot = index_slot(p, &key);
	if (!*slot)
		return false;
	sample_add_again(p, &p->samples[*slot - 1], r);
	return true;
}

int profile_add(struct profile *p, const struct profile_record *r)
{
	struct sample_id key;
	struct profile_sample *s;
	uint32_t *slot;
	int err;

	sample_id_of(r, &key);
	if ((p->nsamples + 1) * 2 > p->index_slots && (p->nsamples >= UINT32_MAX - 1 || index_grow(p)))
		return -ENOMEM;
	slot = index_slot(p, &key);
	if (*slot) {
		sample_add_again(p, &p->samples[*slot - 1], r);
		return 0;
	}
	s = sample_new(p);
	if (!s)
		return -ENOMEM;
	s->tgid = r->tgid;
	s->pid = r->pid;
	memcpy(s->comm, key.comm, sizeof(s->comm));
	s->user_stack_id = r->user_stack_id;
	s->kernel_stack_id = r->kernel_stack_id;
	s->object = r->object;
	s->nuser = r->nuser;
	s->nkernel = r->nkernel;
	err = sample_symbolize(p, s, r->user_ips, r->kernel_ips, r->raw);
	if (err) {
		free(s->frames);
		free(s->object_name);
		p->nsamples--;
		return err;
	}
	*slot = (uint32_t)p->nsamples;
	sample_note_jit(s, now_ns(CLOCK_MONOTONIC));
	p->bytes += heap_bytes(s->frames) + heap_bytes(s->object_name);
	sample_add_values(p, s, r);
	return 0;
}

uint64_t profile_total(const struct profile *p, int value_index)
{
	uint64_t total = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		total += p->samples[i].values[value_index];
	return total;
}
