lmdeploy serve api_server ./workspace --server_name 0.0.0.0 --server_port 8093 --instance_num 256 --tp 1
