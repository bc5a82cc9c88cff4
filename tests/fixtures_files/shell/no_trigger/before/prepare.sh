#!/bin/bash
# download the data set
set -e
mkdir -p data
wget -q https://example.com/data.tar.gz -O data/data.tar.gz
tar -xzf data/data.tar.gz -C data
