#define _GNU_SOURCE
#include <sys/mman.h>
#include <stdio.h>
#include <time.h>
#include <string.h>
#include <stdint.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(){
  const size_t S=256*1024, H=2u<<20;
  for(int round=0;round<3;round++){
  // 8 slabs of 256 KiB populated with MADV_POPULATE_WRITE
  double t0=now();
  for(int i=0;i<8;i++){ char*p=mmap(0,S,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); madvise(p,S,23/*MADV_POPULATE_WRITE*/);}
  double t1=now();
  // 8 slabs touched page by page
  for(int i=0;i<8;i++){ volatile char*p=mmap(0,S,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); for(size_t o=0;o<S;o+=4096)p[o]=1;}
  double t2=now();
  // one 2 MiB huge page region, aligned
  char*r=mmap(0,2*H,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  char*a=(char*)(((uintptr_t)r+H-1)&~(uintptr_t)(H-1));
  int rc=madvise(a,H,MADV_HUGEPAGE);
  double t3=now(); a[0]=1; double t4=now();
  volatile char*b=a; for(size_t o=0;o<H;o+=4096)b[o]=1; double t5=now();
  printf("8x256K populate %.0f us; 8x256K touch %.0f us; 2M huge first touch %.0f us (rc %d) rest %.0f us\n",t1-t0,t2-t1,t4-t3,rc,t5-t4);
  }
  FILE*f=fopen("/proc/self/smaps_rollup","r"); char l[256]; while(fgets(l,256,f)) if(strstr(l,"AnonHuge")) fputs(l,stdout);
}
