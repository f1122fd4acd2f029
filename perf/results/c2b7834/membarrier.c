#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>
#include <stdatomic.h>
static int mb(int cmd){return syscall(__NR_membarrier,cmd,0,0);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static atomic_int stop; static volatile long sink;
static void* spin(void*a){ long x=0; while(!atomic_load_explicit(&stop,memory_order_relaxed)) x++; sink=x; return 0;}
static void* sleeper(void*a){ while(!atomic_load(&stop)) usleep(1000); return 0;}
int main(){
  printf("query %x\n", mb(MEMBARRIER_CMD_QUERY));
  printf("register %d\n", mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED));
  for(int mode=0;mode<3;mode++){
    pthread_t t; atomic_store(&stop,0);
    if(mode==1) pthread_create(&t,0,spin,0);
    if(mode==2) pthread_create(&t,0,sleeper,0);
    usleep(20000);
    const int N=20000; double t0=now();
    for(int i=0;i<N;i++) mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    double t1=now();
    printf("%s: %.0f ns per membarrier\n", mode==0?"alone":mode==1?"other thread spinning":"other thread sleeping",(t1-t0)/N);
    atomic_store(&stop,1); if(mode) pthread_join(t,0);
  }
}
