/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting, stopping and parking the vCPU thread outside KVM_RUN.  A
 * pauser raises pause_depth and kicks the vCPU; the vCPU thread checks
 * pause_depth before each KVM_RUN and parks, which the pauser waits for.
 * The kick is two-fold: immediate_exit makes the next KVM_RUN return at
 * once, and a signal, sent only while the vCPU thread is at KVM_RUN,
 * throws it out of one under way with EINTR.  The host-thread vCPU
 * (writer.c) needs no kick: it checks pause_depth between pages.
 * minivmm_run_on_vcpu() uses the same kick: the vCPU thread sees
 * call_pending where it checks pause_depth, and runs the call there.
 * The guest's longest stall is kept here too: the writer's own, or the
 * KVM vCPU's time parked.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "minivmm/vmm-private.h"

#define KICK_SIGNAL	SIGUSR1

static void kick_handler(int sig)
{
}

int minivmm_kick_init(void)
{
	/* No SA_RESTART: KVM_RUN must return EINTR. */
	struct sigaction sa = { .sa_handler = kick_handler };

	sigemptyset(&sa.sa_mask);
	return sigaction(KICK_SIGNAL, &sa, NULL) < 0 ? -errno : 0;
}

int minivmm_kick_unblock(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, KICK_SIGNAL);
	return -pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * Under lock, with the vCPU thread RUNNING.  Both sides store, then load
 * the other's flag (sequentially consistent): a vCPU that did not see the
 * pause yet either is in_run, and gets the signal, or enters KVM_RUN after
 * immediate_exit was set.
 */
void minivmm_kick(struct minivmm *vmm)
{
	if (vmm->kind != MINIVMM_VCPU_KVM)
		return;
	__atomic_store_n(&vmm->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (atomic_load(&vmm->in_run))
		pthread_kill(vmm->thread, KICK_SIGNAL);
}

void minivmm_thread_exit(struct minivmm *vmm)
{
	pthread_mutex_lock(&vmm->lock);
	vmm->state = MINIVMM_VCPU_DEAD;
	pthread_cond_broadcast(&vmm->parked);
	pthread_cond_broadcast(&vmm->pass);
	pthread_cond_broadcast(&vmm->called);
	pthread_mutex_unlock(&vmm->lock);
}

int minivmm_start(struct minivmm *vmm)
{
	void *(*body)(void *) = vmm->kind == MINIVMM_VCPU_THREAD ?
				minivmm_writer_thread : minivmm_vcpu_thread;
	int rc;

	pthread_mutex_lock(&vmm->lock);
	if (vmm->state != MINIVMM_VCPU_IDLE) {
		pthread_mutex_unlock(&vmm->lock);
		return -EBUSY;
	}
	vmm->state = MINIVMM_VCPU_RUNNING;
	rc = -pthread_create(&vmm->thread, NULL, body, vmm);
	if (rc)
		vmm->state = MINIVMM_VCPU_IDLE;
	pthread_mutex_unlock(&vmm->lock);
	return rc;
}

void minivmm_vcpu_stop(struct minivmm *vmm)
{
	enum minivmm_vcpu_state state;

	pthread_mutex_lock(&vmm->lock);
	atomic_store(&vmm->stop, true);
	state = vmm->state;
	if (state == MINIVMM_VCPU_RUNNING)
		minivmm_kick(vmm);
	pthread_cond_broadcast(&vmm->wake);
	pthread_mutex_unlock(&vmm->lock);
	if (state != MINIVMM_VCPU_IDLE)
		pthread_join(vmm->thread, NULL);
}

/* Under lock, on the vCPU thread: runs the pending call without the lock
 * (fn may take its time, or pause nothing: it runs where the vCPU is). */
static void call_serve(struct minivmm *vmm)
{
	minivmm_vcpu_fn fn = vmm->call_fn;
	int rc;

	pthread_mutex_unlock(&vmm->lock);
	rc = fn(vmm->call_opaque, vmm->vcpu_fd);
	pthread_mutex_lock(&vmm->lock);
	vmm->call_rc = rc;
	vmm->call_fn = NULL;
	atomic_store(&vmm->call_pending, false);
	vmm->calls_done++;
	pthread_cond_broadcast(&vmm->called);
}

/* Only the vCPU thread stores stall_max_ns: a reset is a request it
 * takes, so that no stall it measured can land after the reset. */
/* *max = v if v is more; only the vCPU thread writes it. */
static bool stall_max(atomic_uint_fast64_t *max, uint64_t v)
{
	if (v <= atomic_load_explicit(max, memory_order_relaxed))
		return false;
	atomic_store_explicit(max, v, memory_order_relaxed);
	return true;
}

uint64_t minivmm_stall_mark(struct minivmm *vmm, uint64_t from, bool parked)
{
	uint64_t now = minivmm_now_ns();

	if (atomic_load_explicit(&vmm->stall_reset, memory_order_relaxed) &&
	    atomic_exchange(&vmm->stall_reset, false)) {
		atomic_store_explicit(&vmm->stall_max_ns, 0, memory_order_relaxed);
		atomic_store_explicit(&vmm->stall_park_max_ns, 0, memory_order_relaxed);
		atomic_store_explicit(&vmm->stall_from_ns, now, memory_order_relaxed);
	} else if (from) {
		if (stall_max(&vmm->stall_max_ns, now - from))
			atomic_store_explicit(&vmm->stall_end_ns, now, memory_order_relaxed);
		if (parked)
			stall_max(&vmm->stall_park_max_ns, now - from);
	}
	return now;
}

void minivmm_stall_reset(struct minivmm *vmm)
{
	atomic_store(&vmm->stall_reset, true);
	/* The long-mode guest's own measure: it takes the reset itself. */
	if (vmm->tsc_khz) {
		pthread_mutex_lock(&vmm->lock);
		__atomic_store_n(&minivmm_state_of(vmm)->stall_reset, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&vmm->lock);
	}
}

bool minivmm_park(struct minivmm *vmm)
{
	/* The KVM guest cannot tell its stalls yet: its time parked stands
	 * for them.  The writer times its own, parks included. */
	bool timed = vmm->kind == MINIVMM_VCPU_KVM;
	uint64_t parked_at = 0;
	bool go;

	pthread_mutex_lock(&vmm->lock);
	for (;;) {
		if (vmm->call_fn && !atomic_load(&vmm->stop)) {
			call_serve(vmm);
			continue;
		}
		if (!atomic_load(&vmm->pause_depth) || atomic_load(&vmm->stop))
			break;
		if (vmm->state != MINIVMM_VCPU_PARKED) {
			vmm->state = MINIVMM_VCPU_PARKED;
			pthread_cond_broadcast(&vmm->parked);
			if (timed)
				parked_at = minivmm_stall_mark(vmm, 0, false);
		}
		pthread_cond_wait(&vmm->wake, &vmm->lock);
	}
	vmm->state = MINIVMM_VCPU_RUNNING;
	if (vmm->run)
		vmm->run->immediate_exit = 0;
	go = !atomic_load(&vmm->stop);
	pthread_mutex_unlock(&vmm->lock);
	if (parked_at)
		minivmm_stall_mark(vmm, parked_at, true);
	return go;
}

int minivmm_run_on_vcpu(struct minivmm *vmm, minivmm_vcpu_fn fn, void *opaque)
{
	uint64_t ticket;
	int rc;

	if (vmm->kind != MINIVMM_VCPU_KVM)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&vmm->lock);
	/* No vCPU thread, or this is it: nothing runs the vCPU meanwhile. */
	if (vmm->state == MINIVMM_VCPU_IDLE || vmm->state == MINIVMM_VCPU_DEAD ||
	    pthread_equal(pthread_self(), vmm->thread)) {
		pthread_mutex_unlock(&vmm->lock);
		return fn(opaque, vmm->vcpu_fd);
	}
	while (vmm->call_fn && vmm->state != MINIVMM_VCPU_DEAD)
		pthread_cond_wait(&vmm->called, &vmm->lock);
	vmm->call_fn = fn;
	vmm->call_opaque = opaque;
	ticket = vmm->calls_done + 1;
	atomic_store(&vmm->call_pending, true);
	if (vmm->state == MINIVMM_VCPU_RUNNING)
		minivmm_kick(vmm);
	else
		pthread_cond_broadcast(&vmm->wake);	/* parked: serve it */
	while (vmm->calls_done < ticket && vmm->state != MINIVMM_VCPU_DEAD)
		pthread_cond_wait(&vmm->called, &vmm->lock);
	if (vmm->calls_done >= ticket) {
		rc = vmm->call_rc;
		pthread_mutex_unlock(&vmm->lock);
		return rc;
	}
	/* The thread stopped first: take the call back, run it here. */
	vmm->call_fn = NULL;
	atomic_store(&vmm->call_pending, false);
	pthread_mutex_unlock(&vmm->lock);
	return fn(opaque, vmm->vcpu_fd);
}

int minivmm_pause(void *opaque)
{
	struct minivmm *vmm = opaque;
	int rc = 0;

	pthread_mutex_lock(&vmm->lock);
	if (vmm->state == MINIVMM_VCPU_RUNNING &&
	    pthread_equal(pthread_self(), vmm->thread)) {
		rc = -EDEADLK;	/* it would wait for itself */
		goto out;
	}
	if (atomic_fetch_add(&vmm->pause_depth, 1) == 0 &&
	    vmm->state == MINIVMM_VCPU_RUNNING)
		minivmm_kick(vmm);
	/* A dead or unstarted vCPU is not in KVM_RUN either. */
	while (vmm->state == MINIVMM_VCPU_RUNNING)
		pthread_cond_wait(&vmm->parked, &vmm->lock);
out:
	pthread_mutex_unlock(&vmm->lock);
	return rc;
}

/*
 * The last resume wakes the vCPU first, then frees what a move of the
 * memory left behind: the vCPU runs on the new memory meanwhile, and no
 * pauser can be looking at the old one (it would hold a pause).
 */
int minivmm_resume(void *opaque)
{
	struct minivmm *vmm = opaque;
	void *old_hva = NULL;
	uint64_t old_size = 0;
	int rc = 0, old_fd = -1;

	pthread_mutex_lock(&vmm->lock);
	if (!atomic_load(&vmm->pause_depth)) {
		rc = -EINVAL;
	} else if (atomic_fetch_sub(&vmm->pause_depth, 1) == 1) {
		pthread_cond_broadcast(&vmm->wake);
		minivmm_mem_take_old(vmm, &old_hva, &old_size, &old_fd);
	}
	pthread_mutex_unlock(&vmm->lock);
	minivmm_mem_release(old_hva, old_size, old_fd);
	return rc;
}

/* Waits until *count reaches want, the vCPU died, or timeout_ms passed. */
static int wait_count(struct minivmm *vmm, atomic_uint_fast64_t *count,
		      uint64_t want, int timeout_ms)
{
	struct timespec end;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&vmm->lock);
	while (atomic_load(count) < want &&
	       vmm->state != MINIVMM_VCPU_DEAD && !rc)
		rc = pthread_cond_timedwait(&vmm->pass, &vmm->lock, &end);
	if (atomic_load(count) >= want)
		rc = 0;
	else
		rc = vmm->state == MINIVMM_VCPU_DEAD ? -EIO : -ETIMEDOUT;
	pthread_mutex_unlock(&vmm->lock);
	return rc;
}

int minivmm_wait_pass(struct minivmm *vmm, uint64_t pass, int timeout_ms)
{
	return wait_count(vmm, &vmm->passes, pass, timeout_ms);
}

int minivmm_wait_mce(struct minivmm *vmm, uint64_t mces, int timeout_ms)
{
	return wait_count(vmm, &vmm->mces, mces, timeout_ms);
}
