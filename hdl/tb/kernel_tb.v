// Testbench for the generated AttentionKernel (target/hdl/kernel.v, 8 lanes).
//
// Reads one line per clock from +vectors=<file>:
//   q_we q_addr q_data start d s c k_valid k0..k7 v_valid v0..v7  (hex)
// applies it, gives one rising edge, and after the edge writes each
// output beat to +out=<file> as "<clock> <o0> … <o7>" (decimal clock, hex
// i32 bits) and each done as "done <clock>", the sampling point of
// hdl::sim::tick. tests/verilog_cosim.rs compares it with
// attention::engine::dense_group and the rust-hdl run.
`timescale 1ns / 1ps
module kernel_tb;
    reg clock = 1'b0;
    reg q_we = 1'b0;
    reg [7:0] q_addr = 8'd0;
    reg [31:0] q_data = 32'd0;
    reg start = 1'b0;
    reg [8:0] d = 9'd0;
    reg [13:0] s = 14'd0;
    reg [31:0] c = 32'd0;
    reg k_valid = 1'b0;
    reg [15:0] k0 = 16'd0, k1 = 16'd0, k2 = 16'd0, k3 = 16'd0;
    reg [15:0] k4 = 16'd0, k5 = 16'd0, k6 = 16'd0, k7 = 16'd0;
    reg v_valid = 1'b0;
    reg [15:0] v0 = 16'd0, v1 = 16'd0, v2 = 16'd0, v3 = 16'd0;
    reg [15:0] v4 = 16'd0, v5 = 16'd0, v6 = 16'd0, v7 = 16'd0;
    wire v_ready, out_valid, busy, done;
    wire [31:0] o0, o1, o2, o3, o4, o5, o6, o7;

    kernel dut (
        .clock(clock), .q_we(q_we), .q_addr(q_addr), .q_data(q_data),
        .start(start), .d(d), .s(s), .c(c), .k_valid(k_valid),
        .k_data$0(k0), .k_data$1(k1), .k_data$2(k2), .k_data$3(k3),
        .k_data$4(k4), .k_data$5(k5), .k_data$6(k6), .k_data$7(k7),
        .v_ready(v_ready), .v_valid(v_valid),
        .v_data$0(v0), .v_data$1(v1), .v_data$2(v2), .v_data$3(v3),
        .v_data$4(v4), .v_data$5(v5), .v_data$6(v6), .v_data$7(v7),
        .out_valid(out_valid),
        .out_data$0(o0), .out_data$1(o1), .out_data$2(o2), .out_data$3(o3),
        .out_data$4(o4), .out_data$5(o5), .out_data$6(o6), .out_data$7(o7),
        .busy(busy), .done(done)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                    q_we, q_addr, q_data, start, d, s, c, k_valid, k0, k1, k2, k3, k4, k5, k6, k7,
                    v_valid, v0, v1, v2, v3, v4, v5, v6, v7);
        while (n == 25) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid)
                $fwrite(fout, "%0d %h %h %h %h %h %h %h %h\n", t, o0, o1, o2, o3, o4, o5, o6, o7);
            if (done)
                $fwrite(fout, "done %0d\n", t);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                        q_we, q_addr, q_data, start, d, s, c, k_valid, k0, k1, k2, k3, k4, k5, k6, k7,
                        v_valid, v0, v1, v2, v3, v4, v5, v6, v7);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
