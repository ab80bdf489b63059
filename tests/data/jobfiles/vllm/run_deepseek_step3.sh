# start the vLLM server with PP=2 and TP=8,
# adjust the vllm arguments as desired..
VLLM_USE_V1=1 python3 -m vllm.entrypoints.openai.api_server \
    --model /path/to/the/model/in/the/container \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --gpu-memory-utilization 0.92 \
    --dtype auto \
    --distributed-executor-backend ray \
    --served-model-name deepseekv3 \
    --max-num-seqs 40 \
    --max-model-len 16384 \
    --enable-chunked-prefill \
    --enable-prefix-caching \
    --trust-remote-code
